//! `gpuplan serve` as a process: it restarts itself with mimalloc's options
//! (freed pages back at once, no transparent huge pages) and reports its
//! resident memory and live heap bytes in `/metrics`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the server when the test ends, passed or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The body of `GET path`, or `None` while the server is not up.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// The value of an unlabelled metric line `name value`.
fn gauge(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok())?
    })
}

#[test]
fn serve_reports_memory_gauges_and_runs_with_the_allocator_options() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .env_remove("MIMALLOC_PURGE_DELAY")
        .env_remove("MIMALLOC_ALLOW_THP")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gpuplan serve starts");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    let metrics = loop {
        if let Some(body) = get(port, "/metrics") {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not answer in 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let live = gauge(&metrics, "gpuplan_heap_live_bytes").expect("live heap gauge");
    // The bundled catalog alone is parsed onto the heap: more than 100 KiB.
    assert!(live > 100e3, "live heap {live} B:\n{metrics}");
    if cfg!(target_os = "linux") {
        let resident = gauge(&metrics, "process_resident_memory_bytes").expect("RSS gauge");
        assert!(
            resident > live,
            "RSS {resident} B holds the live heap {live} B"
        );
        // The restart kept the process id and set both options.
        let environ = std::fs::read(format!("/proc/{}/environ", server.0.id()))
            .expect("the server's environment");
        let environ = String::from_utf8_lossy(&environ);
        for option in ["MIMALLOC_PURGE_DELAY=0", "MIMALLOC_ALLOW_THP=0"] {
            assert!(
                environ.split('\0').any(|v| v == option),
                "{option} missing from the server's environment"
            );
        }
    }
}
