//! The assembled catalog: embedded tables, user overrides, alias resolution,
//! validation and lookups with suggestions.

use crate::anomalies::{Anomaly, AnomalyIndex};
use crate::checkpoint::{parse_checkpoints, Checkpoint, Variant};
use crate::error::{CatalogError, CatalogErrorKind, Result};
use crate::gpu::{parse_gpus, GpuSpec, Precision};
use crate::mig::{parse_mig_profiles, MigProfile};
use crate::model::{parse_models, parse_parametric_gpt, ModelArch};
use crate::offering::{parse_offerings, parse_regions, Offering, Region};
use crate::table::{Origin, Table};
use std::collections::{BTreeMap, HashMap};

/// The tables of the catalog, by the file name they are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// `gpus.csv`
    Gpus,
    /// `gpu_aliases.csv`
    GpuAliases,
    /// `mig_profiles.csv`
    MigProfiles,
    /// `cloud_offerings.csv`
    Offerings,
    /// `regions.csv`
    Regions,
    /// `models.csv`
    Models,
    /// `checkpoints.csv`
    Checkpoints,
}

impl TableKind {
    /// Every table, in load order.
    pub const ALL: [TableKind; 7] = [
        TableKind::Gpus,
        TableKind::GpuAliases,
        TableKind::MigProfiles,
        TableKind::Offerings,
        TableKind::Regions,
        TableKind::Models,
        TableKind::Checkpoints,
    ];

    /// The file name of the table.
    pub fn file_name(self) -> &'static str {
        match self {
            TableKind::Gpus => "gpus.csv",
            TableKind::GpuAliases => "gpu_aliases.csv",
            TableKind::MigProfiles => "mig_profiles.csv",
            TableKind::Offerings => "cloud_offerings.csv",
            TableKind::Regions => "regions.csv",
            TableKind::Models => "models.csv",
            TableKind::Checkpoints => "checkpoints.csv",
        }
    }

    fn embedded(self) -> &'static str {
        match self {
            TableKind::Gpus => include_str!("../../../data/gpus.csv"),
            TableKind::GpuAliases => include_str!("../../../data/gpu_aliases.csv"),
            TableKind::MigProfiles => include_str!("../../../data/mig_profiles.csv"),
            TableKind::Offerings => include_str!("../../../data/cloud_offerings.csv"),
            TableKind::Regions => include_str!("../../../data/regions.csv"),
            TableKind::Models => include_str!("../../../data/models.csv"),
            TableKind::Checkpoints => include_str!("../../../data/checkpoints.csv"),
        }
    }
}

/// Collects tables (embedded, then user files) before validation.
#[derive(Debug, Clone, Default)]
pub struct CatalogBuilder {
    gpus: Vec<GpuSpec>,
    /// (GPU name, alias, row): aliases are resolved when the catalog is built.
    aliases: Vec<(String, String, Origin)>,
    /// MIG profiles with their row (their GPU is resolved at build time).
    mig: Vec<(MigProfile, Origin)>,
    offerings: Vec<Offering>,
    regions: Vec<Region>,
    models: Vec<ModelArch>,
    /// Checkpoints with the file and line they came from (for errors at build time).
    checkpoints: Vec<(Checkpoint, Origin)>,
}

impl CatalogBuilder {
    /// A builder holding the bundled tables.
    pub fn embedded() -> Result<Self> {
        let mut b = CatalogBuilder::default();
        for kind in TableKind::ALL {
            let name = format!("<bundled>/data/{}", kind.file_name());
            b.extend(kind, &name, kind.embedded())?;
        }
        Ok(b)
    }

    /// Adds the rows of one table file; a row whose key already exists
    /// replaces the earlier one (users override bundled rows).
    pub fn extend(&mut self, kind: TableKind, file: &str, text: &str) -> Result<&mut Self> {
        match kind {
            TableKind::Gpus => self.add_gpus(file, text)?,
            TableKind::GpuAliases => self.add_aliases(file, text)?,
            TableKind::MigProfiles => {
                for (p, origin) in parse_mig_profiles(file, text)? {
                    self.mig.retain(|(x, _)| {
                        !(x.gpu.eq_ignore_ascii_case(&p.gpu) && x.profile == p.profile)
                    });
                    self.mig.push((p, origin));
                }
            }
            TableKind::Offerings => {
                let new = parse_offerings(file, text)?;
                self.add_offerings(new);
            }
            TableKind::Regions => {
                for r in parse_regions(file, text)? {
                    self.regions
                        .retain(|x| !(x.provider == r.provider && x.region == r.region));
                    self.regions.push(r);
                }
            }
            TableKind::Models => self.add_models(file, text)?,
            TableKind::Checkpoints => {
                for (c, origin) in parse_checkpoints(file, text)? {
                    // A user row replaces the bundled one of the same model, variant and format.
                    self.checkpoints.retain(|(x, _)| {
                        !(x.model == c.model && x.variant == c.variant && x.format == c.format)
                    });
                    self.checkpoints.push((c, origin));
                }
            }
        }
        Ok(self)
    }

    /// Adds the GPUs of a `gpus.csv`; `H100 SXM 80GB` replaces
    /// `H100-SXM-80GB` (both look up the same). A new GPU named like another
    /// GPU's alias would make that alias ambiguous: the file adding the GPU
    /// is at fault.
    fn add_gpus(&mut self, file: &str, text: &str) -> Result<()> {
        for g in parse_gpus(file, text)? {
            if let Some((owner, _, origin)) = self.aliases.iter().find(|(owner, alias, _)| {
                normalize(alias) == normalize(&g.name) && normalize(owner) != normalize(&g.name)
            }) {
                return Err(CatalogError::invalid(
                    "name",
                    &g.name,
                    format!(
                        "a name that is not already an alias of `{owner}` ({}, line {})",
                        origin.file, origin.line
                    ),
                )
                .in_file(file));
            }
            self.gpus
                .retain(|x| normalize(&x.name) != normalize(&g.name));
            self.gpus.push(g);
        }
        Ok(())
    }

    /// Adds the aliases of a `gpu_aliases.csv` (resolved when the catalog is
    /// built). An alias may repeat for the same GPU, never for two GPUs.
    fn add_aliases(&mut self, file: &str, text: &str) -> Result<()> {
        let table = Table::parse(file, text)?;
        table.require(&["name", "alias"])?;
        let mut seen: HashMap<String, (String, u64)> = HashMap::new();
        for row in table.rows() {
            let alias = row.string("alias")?;
            let name = row.string("name")?;
            if let Some((other, first_line)) = seen.get(&normalize(&alias)) {
                if !other.eq_ignore_ascii_case(&name) {
                    return Err(row.error(
                        CatalogError::new(CatalogErrorKind::Duplicate {
                            id: alias,
                            first_line: *first_line,
                        })
                        .field("alias"),
                    ));
                }
            }
            seen.insert(normalize(&alias), (name.clone(), row.line));
            self.aliases
                .retain(|(_, a, _)| normalize(a) != normalize(&alias));
            self.aliases.push((name, alias, Origin::of(&row)));
        }
        Ok(())
    }

    /// Adds the models of a `models.csv`. A row replaces every earlier model
    /// that shares a name with it (id, alias or HF repo): a user row whose id
    /// is an alias of a bundled model replaces that model, instead of being
    /// shadowed by it on lookup. Published checkpoints belong to a model id:
    /// those of a model replaced under another id no longer describe any
    /// model here.
    fn add_models(&mut self, file: &str, text: &str) -> Result<()> {
        let new = parse_models(file, text)?;
        let names: std::collections::HashSet<String> =
            new.iter().flat_map(model_names).map(normalize).collect();
        self.models
            .retain(|x| !model_names(x).any(|k| names.contains(&normalize(k))));
        self.models.extend(new);
        let models = &self.models;
        self.checkpoints
            .retain(|(c, _)| models.iter().any(|m| m.id == c.model));
        Ok(())
    }

    /// Adds offerings; rows with the same provider, instance, region and zone replace earlier ones.
    pub fn add_offerings(&mut self, new: Vec<Offering>) -> &mut Self {
        let key = |o: &Offering| {
            format!(
                "{}/{}/{}/{}",
                o.provider,
                o.instance_type,
                o.region,
                o.zone.as_deref().unwrap_or("")
            )
        };
        let new_keys: std::collections::HashSet<String> = new.iter().map(key).collect();
        self.offerings.retain(|o| !new_keys.contains(&key(o)));
        self.offerings.extend(new);
        self
    }

    /// Drops every offering (to plan over a hand-made list only).
    pub fn clear_offerings(&mut self) -> &mut Self {
        self.offerings.clear();
        self
    }

    /// Replaces every offering of `provider` with `new` (a fresher price list).
    pub fn replace_provider_offerings(&mut self, provider: &str, new: Vec<Offering>) -> &mut Self {
        let p = provider.to_ascii_lowercase();
        self.offerings.retain(|o| o.provider != p);
        self.offerings.extend(new);
        self
    }

    /// Validates cross-references and builds the lookup indexes.
    pub fn build(mut self) -> Result<Catalog> {
        crate::gpu::set_power_headroom(&mut self.gpus);
        let gpu_index = gpu_index(&self.gpus, &self.aliases)?;
        let mig = canonical_mig_profiles(&self.gpus, &gpu_index, self.mig)?;
        let (offerings, unresolved) = resolve_offerings(&self.gpus, &gpu_index, self.offerings);
        let model_index = model_index(&self.models);
        let checkpoints = known_model_checkpoints(&self.models, self.checkpoints)?;
        let region_index: HashMap<(String, String), usize> = self
            .regions
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.provider.clone(), r.region.clone()), i))
            .collect();
        let warnings = catalog_warnings(&offerings, &unresolved, &region_index);
        let anomalies = AnomalyIndex::build(&offerings, &self.gpus);
        Ok(Catalog {
            anomalies,
            gpus: self.gpus,
            gpu_index,
            mig,
            offerings,
            unresolved,
            regions: self.regions,
            region_index,
            models: self.models,
            model_index,
            checkpoints,
            warnings,
        })
    }
}

/// Every GPU's normalized name and alias to its index. An alias of an
/// unknown GPU, or one that is another GPU's name (it would be ignored on
/// lookup, names win), is an error naming its row.
fn gpu_index(
    gpus: &[GpuSpec],
    aliases: &[(String, String, Origin)],
) -> Result<HashMap<String, usize>> {
    let mut index = HashMap::new();
    for (i, g) in gpus.iter().enumerate() {
        index.insert(normalize(&g.name), i);
    }
    for (name, alias, origin) in aliases {
        let Some(&i) = index.get(&normalize(name)) else {
            let suggestions = suggest(name, gpus.iter().map(|g| g.name.as_str()));
            return Err(
                origin.locate(CatalogError::unknown("GPU", name, suggestions).field("name"))
            );
        };
        if let Some(other) = gpus.iter().find(|g| {
            normalize(&g.name) == normalize(alias) && normalize(&g.name) != normalize(name)
        }) {
            return Err(origin.locate(CatalogError::invalid(
                "alias",
                alias,
                format!(
                    "a name of no other GPU (`{}` is a GPU of its own)",
                    other.name
                ),
            )));
        }
        index.entry(normalize(alias)).or_insert(i);
    }
    Ok(index)
}

/// MIG profiles under their GPU's canonical name (what `mig_profiles_of`
/// looks up; a profile may name its GPU by any alias), a later row for the
/// same GPU and profile replacing an earlier one. An unknown GPU is named by
/// the file and line of the profile's own row.
fn canonical_mig_profiles(
    gpus: &[GpuSpec],
    gpu_index: &HashMap<String, usize>,
    rows: Vec<(MigProfile, Origin)>,
) -> Result<Vec<MigProfile>> {
    let mut mig: Vec<MigProfile> = Vec::with_capacity(rows.len());
    for (mut p, origin) in rows {
        let Some(&i) = gpu_index.get(&normalize(&p.gpu)) else {
            let suggestions = suggest(&p.gpu, gpus.iter().map(|g| g.name.as_str()));
            return Err(
                origin.locate(CatalogError::unknown("GPU", &p.gpu, suggestions).field("gpu"))
            );
        };
        p.gpu = gpus[i].name.clone();
        mig.retain(|x| !(x.gpu == p.gpu && x.profile == p.profile));
        mig.push(p);
    }
    Ok(mig)
}

/// Offerings with their GPU resolved, cheapest first (then by provider,
/// instance type and region), and the count of rows per accelerator name
/// that no GPU spec matches.
fn resolve_offerings(
    gpus: &[GpuSpec],
    gpu_index: &HashMap<String, usize>,
    mut offerings: Vec<Offering>,
) -> (Vec<Offering>, BTreeMap<String, usize>) {
    let mut unresolved: BTreeMap<String, usize> = BTreeMap::new();
    for o in &mut offerings {
        match gpu_index.get(&normalize(&o.accelerator)) {
            Some(&i) => o.gpu = Some(gpus[i].name.clone()),
            None => *unresolved.entry(o.accelerator.clone()).or_default() += 1,
        }
    }
    offerings.sort_by(|a, b| {
        a.list_price()
            .total_cmp(&b.list_price())
            .then_with(|| a.provider.cmp(&b.provider))
            .then_with(|| a.instance_type.cmp(&b.instance_type))
            .then_with(|| a.region.cmp(&b.region))
    });
    (offerings, unresolved)
}

/// Every model's normalized id, aliases and Hugging Face repo to its index
/// (the first model to claim a key keeps it).
fn model_index(models: &[ModelArch]) -> HashMap<String, usize> {
    let mut index = HashMap::new();
    for (i, m) in models.iter().enumerate() {
        for key in std::iter::once(&m.id)
            .chain(m.aliases.iter())
            .chain(m.hf_repo.iter())
        {
            index.entry(normalize(key)).or_insert(i);
        }
    }
    index
}

/// The checkpoints, each naming a catalog model by its id (never an alias);
/// an unknown model is an error naming the checkpoint's row.
fn known_model_checkpoints(
    models: &[ModelArch],
    rows: Vec<(Checkpoint, Origin)>,
) -> Result<Vec<Checkpoint>> {
    let mut checkpoints = Vec::with_capacity(rows.len());
    for (c, origin) in rows {
        if !models.iter().any(|m| m.id == c.model) {
            let suggestions = suggest(&c.model, models.iter().map(|m| m.id.as_str()));
            return Err(
                origin.locate(CatalogError::unknown("model", &c.model, suggestions).field("model"))
            );
        }
        checkpoints.push(c);
    }
    Ok(checkpoints)
}

/// What the catalog leaves out of plans, said once: offerings without a GPU
/// spec, without any price, or in a region without a location.
fn catalog_warnings(
    offerings: &[Offering],
    unresolved: &BTreeMap<String, usize>,
    region_index: &HashMap<(String, String), usize>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if !unresolved.is_empty() {
        let rows: usize = unresolved.values().sum();
        warnings.push(format!(
            "{rows} offerings ({} accelerator names) have no GPU spec and are left out of plans: {}",
            unresolved.len(),
            unresolved
                .iter()
                .map(|(k, v)| format!("{k} ({v})"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let unpriced = offerings
        .iter()
        .filter(|o| o.price_per_hour.is_none() && o.spot_price_per_hour.is_none())
        .count();
    if unpriced > 0 {
        warnings.push(format!(
            "{unpriced} offerings list neither an on-demand nor a spot price and are left out of plans"
        ));
    }
    let missing_regions: Vec<String> = offerings
        .iter()
        .filter(|o| !region_index.contains_key(&(o.provider.clone(), o.region.clone())))
        .map(|o| format!("{}/{}", o.provider, o.region))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !missing_regions.is_empty() {
        warnings.push(format!(
            "{} regions have no location in regions.csv (residency constraints exclude them): {}",
            missing_regions.len(),
            missing_regions.join(", ")
        ));
    }
    warnings
}

/// The validated catalog with its lookup indexes.
#[derive(Debug, Clone)]
pub struct Catalog {
    gpus: Vec<GpuSpec>,
    gpu_index: HashMap<String, usize>,
    mig: Vec<MigProfile>,
    offerings: Vec<Offering>,
    unresolved: BTreeMap<String, usize>,
    regions: Vec<Region>,
    region_index: HashMap<(String, String), usize>,
    models: Vec<ModelArch>,
    model_index: HashMap<String, usize>,
    checkpoints: Vec<Checkpoint>,
    warnings: Vec<String>,
    anomalies: AnomalyIndex,
}

/// Every name a model is looked up by: its id, aliases and HF repo.
fn model_names(m: &ModelArch) -> impl Iterator<Item = &str> {
    std::iter::once(m.id.as_str())
        .chain(m.aliases.iter().map(String::as_str))
        .chain(m.hf_repo.as_deref())
}

/// Lowercase, with spaces and underscores as dashes: the lookup key of names
/// (GPUs, aliases, models). Duplicate checks use it too, so two rows whose
/// names look up the same are one name.
pub(crate) fn normalize(name: &str) -> String {
    name.trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == ' ' || c == '_' { '-' } else { c })
        .collect()
}

/// Up to three known names closest to `name`.
fn suggest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Vec<String> {
    let query = normalize(name);
    let mut scored: Vec<(f64, &str)> = known
        .map(|k| {
            let nk = normalize(k);
            let mut score = strsim::jaro_winkler(&query, &nk);
            if !query.is_empty() && (nk.contains(&query) || query.contains(&nk)) {
                score += 0.2;
            }
            // Typos: at most two edits away counts as close whatever the length.
            if strsim::damerau_levenshtein(&query, &nk) <= 2 {
                score += 0.3;
            }
            (score, k)
        })
        .filter(|(s, _)| *s > 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let mut out: Vec<String> = Vec::new();
    for (_, k) in scored {
        if !out.iter().any(|o| o == k) {
            out.push(k.to_string());
        }
        if out.len() == 3 {
            break;
        }
    }
    out
}

impl Catalog {
    /// The bundled catalog, validated.
    pub fn embedded() -> Result<Catalog> {
        CatalogBuilder::embedded()?.build()
    }

    /// Every GPU spec.
    pub fn gpus(&self) -> &[GpuSpec] {
        &self.gpus
    }

    /// Every MIG profile.
    pub fn mig_profiles(&self) -> &[MigProfile] {
        &self.mig
    }

    /// Every offering, cheapest first.
    pub fn offerings(&self) -> &[Offering] {
        &self.offerings
    }

    /// Accelerator names in the offerings with no GPU spec, and their row counts.
    pub fn unresolved_accelerators(&self) -> &BTreeMap<String, usize> {
        &self.unresolved
    }

    /// Every region.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Every bundled or user-supplied model.
    pub fn models(&self) -> &[ModelArch] {
        &self.models
    }

    /// Every published checkpoint (`checkpoints.csv`).
    pub fn checkpoints(&self) -> &[Checkpoint] {
        &self.checkpoints
    }

    /// The preferred published checkpoint of a model's release at a weight
    /// precision (the first in file order), if any. `model_id` is the catalog id
    /// (`ModelArch::id`).
    pub fn checkpoint(
        &self,
        model_id: &str,
        variant: Variant,
        precision: Precision,
    ) -> Option<&Checkpoint> {
        self.checkpoints_of(model_id, variant, precision)
            .into_iter()
            .next()
    }

    /// Every published checkpoint of a model's release at a weight precision,
    /// preferred first (INT4: AWQ, then GPTQ where both are published).
    pub fn checkpoints_of(
        &self,
        model_id: &str,
        variant: Variant,
        precision: Precision,
    ) -> Vec<&Checkpoint> {
        self.checkpoints
            .iter()
            .filter(|c| c.model == model_id && c.variant == variant && c.precision == precision)
            .collect()
    }

    /// Warnings from loading (unresolved accelerators, regions without location).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Every price or offering anomaly found when the catalog was built (bundled rows and user
    /// overrides alike), sorted by provider, instance type, region and kind. See
    /// [`AnomalyKind`](crate::AnomalyKind) for what each check means.
    pub fn anomalies(&self) -> &[Anomaly] {
        self.anomalies.all()
    }

    /// The anomalies of one offering's (provider, instance type, region); empty when the row
    /// looks sound. A hash lookup, cheap enough to call for every candidate of a plan.
    pub fn offering_anomalies(&self, o: &Offering) -> Vec<&Anomaly> {
        self.anomalies.of(&o.provider, &o.instance_type, &o.region)
    }

    /// Looks a GPU up by name or any alias, case-insensitively.
    pub fn gpu(&self, name: &str) -> Result<&GpuSpec> {
        match self.gpu_index.get(&normalize(name)) {
            Some(&i) => Ok(&self.gpus[i]),
            None => {
                let aliases: Vec<&str> = self
                    .gpu_index
                    .keys()
                    .map(String::as_str)
                    .chain(self.gpus.iter().map(|g| g.name.as_str()))
                    .collect();
                let mut s = suggest(name, aliases.into_iter());
                // Show canonical names for the suggested aliases.
                for x in &mut s {
                    if let Some(&i) = self.gpu_index.get(&normalize(x)) {
                        *x = self.gpus[i].name.clone();
                    }
                }
                s.dedup();
                Err(CatalogError::unknown("GPU", name, s))
            }
        }
    }

    /// Looks a model up by id, alias or Hugging Face repo id, case-insensitively;
    /// also accepts the parametric `gpt-h<hidden>-l<layers>-a<heads>[-v<vocab>][-s<seq>]`.
    pub fn model(&self, name: &str) -> Result<ModelArch> {
        if let Some(&i) = self.model_index.get(&normalize(name)) {
            return Ok(self.models[i].clone());
        }
        if let Some(parsed) = parse_parametric_gpt(name) {
            return parsed.map_err(|msg| {
                CatalogError::new(CatalogErrorKind::InvalidValue {
                    value: name.to_string(),
                    expected: msg,
                })
                .field("model")
            });
        }
        let names = self.models.iter().flat_map(|m| {
            std::iter::once(m.id.as_str()).chain(m.aliases.iter().map(String::as_str))
        });
        let mut s = suggest(name, names);
        for x in &mut s {
            if let Some(&i) = self.model_index.get(&normalize(x)) {
                *x = self.models[i].id.clone();
            }
        }
        s.dedup();
        Err(CatalogError::unknown("model", name, s))
    }

    /// The location of a provider's region, if known.
    pub fn region(&self, provider: &str, region: &str) -> Option<&Region> {
        self.region_index
            .get(&(provider.to_ascii_lowercase(), region.to_string()))
            .map(|&i| &self.regions[i])
    }

    /// The MIG profiles of one GPU.
    pub fn mig_profiles_of(&self, gpu: &str) -> Vec<&MigProfile> {
        self.mig
            .iter()
            .filter(|p| p.gpu.eq_ignore_ascii_case(gpu))
            .collect()
    }

    /// Provider ids present in the offerings, sorted.
    pub fn providers(&self) -> Vec<String> {
        let mut p: Vec<String> = self.offerings.iter().map(|o| o.provider.clone()).collect();
        p.sort();
        p.dedup();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_case_and_separators() {
        assert_eq!(
            normalize(" NVIDIA H100_80GB HBM3 "),
            "nvidia-h100-80gb-hbm3"
        );
    }

    /// `llama2-7b` is an alias of the bundled `llama-2-7b`: a user row with
    /// that id replaces the bundled model rather than being shadowed by it.
    #[test]
    fn a_user_model_named_like_a_bundled_alias_replaces_it() {
        let mut b = CatalogBuilder::embedded().unwrap();
        let before = b.models.len();
        let csv = "id,architecture,num_layers,hidden_size,num_attention_heads,num_kv_heads,head_dim,intermediate_size,vocab_size,source\n\
                   llama2-7b,LlamaForCausalLM,2,256,4,4,64,512,1000,test\n";
        b.extend(TableKind::Models, "models.csv", csv).unwrap();
        assert_eq!(b.models.len(), before, "replaced, not added");
        let c = b.build().unwrap();
        assert_eq!(c.model("llama2-7b").unwrap().num_layers, 2);
        assert!(c.model("llama-2-7b").is_err(), "the bundled model is gone");
    }

    #[test]
    fn suggestions_rank_close_names_first() {
        let s = suggest("H10", ["H100", "A100", "L4"].into_iter());
        assert_eq!(s.first().map(String::as_str), Some("H100"));
    }

    /// Found by fuzzing (`catalog_mig_profiles`): a user profile naming an
    /// unknown GPU was reported as in `mig_profiles.csv` with no line; it
    /// names the user's file and the row. A profile may name its GPU by any
    /// alias and is found under the canonical name.
    #[test]
    fn mig_profile_errors_name_the_users_file_and_row() {
        let header = "gpu,profile,compute_slices,memory_slices,max_instances\n";
        let mut b = CatalogBuilder::embedded().unwrap();
        b.extend(
            TableKind::MigProfiles,
            "user/mig.csv",
            &format!("{header}h100,1g.10gb,1,1,7\nH999,1g.10gb,1,1,7\n"),
        )
        .unwrap();
        let e = b.build().unwrap_err();
        assert_eq!(e.file.as_deref(), Some("user/mig.csv"), "{e}");
        assert_eq!(e.line, Some(3), "{e}");
        assert_eq!(e.field.as_deref(), Some("gpu"), "{e}");
        let mut b = CatalogBuilder::embedded().unwrap();
        let before = b.clone().build().unwrap().mig_profiles().len();
        b.extend(
            TableKind::MigProfiles,
            "user/mig.csv",
            &format!("{header}h100,1g.10gb,1,1,5\n"),
        )
        .unwrap();
        let c = b.build().unwrap();
        let h100 = &c.gpu("h100").unwrap().name;
        let found: Vec<_> = c
            .mig_profiles_of(h100)
            .into_iter()
            .filter(|p| p.profile == "1g.10gb")
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].max_instances, 5,
            "the user's row replaces the bundled one"
        );
        assert_eq!(c.mig_profiles().len(), before);
    }

    /// Checkpoints naming an unknown model name the file and the row.
    #[test]
    fn checkpoint_errors_name_the_row() {
        let mut b = CatalogBuilder::embedded().unwrap();
        b.extend(
            TableKind::Checkpoints,
            "user/ck.csv",
            "model,variant,precision,repo,format,source\nnot-a-model,instruct,bf16,a/b,bf16,t\n",
        )
        .unwrap();
        let e = b.build().unwrap_err();
        assert_eq!(
            (e.file.as_deref(), e.line),
            (Some("user/ck.csv"), Some(2)),
            "{e}"
        );
    }

    /// An alias that is another GPU's name was silently ignored on lookup.
    #[test]
    fn an_alias_naming_another_gpu_is_rejected() {
        let mut b = CatalogBuilder::embedded().unwrap();
        b.extend(
            TableKind::GpuAliases,
            "user/aliases.csv",
            "name,alias\nA100-80GB,H100 SXM 80GB\n",
        )
        .unwrap();
        let e = b.build().unwrap_err();
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(2), Some("alias")),
            "{e}"
        );
        assert!(e.to_string().contains("H100-SXM-80GB"), "{e}");
    }
}
