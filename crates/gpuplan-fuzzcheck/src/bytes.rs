//! Structured input from raw fuzz bytes: each call takes what it needs from
//! the front and yields zeros once the bytes run out, so every input decodes.

/// A reader over fuzz bytes.
#[derive(Debug, Clone)]
pub struct Bytes<'a> {
    rest: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { rest: data }
    }

    /// The next byte (0 when none is left).
    pub fn u8(&mut self) -> u8 {
        match self.rest.split_first() {
            Some((b, rest)) => {
                self.rest = rest;
                *b
            }
            None => 0,
        }
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next eight bytes as a float, bit for bit (NaN, infinities and
    /// subnormals included).
    pub fn f64_bits(&mut self) -> f64 {
        let mut b = [0u8; 8];
        for x in &mut b {
            *x = self.u8();
        }
        f64::from_le_bytes(b)
    }

    /// Whether the next byte is odd.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// One of `items` (the first when the bytes run out).
    ///
    /// # Panics
    /// When `items` is empty.
    pub fn pick<'b, T>(&mut self, items: &'b [T]) -> &'b T {
        &items[usize::from(self.u8()) % items.len()]
    }

    /// A number from `lo` to `hi` (both > 0) spread evenly on a log scale,
    /// so that every order of magnitude is explored.
    pub fn log_range(&mut self, lo: f64, hi: f64) -> f64 {
        let t = f64::from(self.u16()) / f64::from(u16::MAX);
        (lo.ln() + t * (hi.ln() - lo.ln())).exp()
    }

    /// A number from `lo` to `hi`, evenly.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        let t = f64::from(self.u16()) / f64::from(u16::MAX);
        lo + t * (hi - lo)
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }
}
