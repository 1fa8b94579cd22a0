//! `gpuplan catalog gpus|offerings|anomalies|models`.

use super::{opt, print_json, table, truncate};
use crate::cli::{CatalogCmd, CatalogTable};
use crate::error::CliResult;
use gpuplan_catalog::{Anomaly, AnomalyKind, Catalog};
use serde::Serialize;

pub fn run(catalog: &Catalog, cmd: CatalogCmd) -> CliResult {
    for w in catalog.warnings() {
        eprintln!("note: {w}");
    }
    match cmd.table {
        CatalogTable::Gpus { filter, json } => gpus(catalog, filter, json),
        CatalogTable::Offerings {
            gpu,
            provider,
            region,
            unresolved,
            limit,
            json,
        } => {
            if unresolved {
                return unresolved_list(catalog, json);
            }
            offerings(catalog, gpu, provider, region, limit, json)
        }
        CatalogTable::Anomalies { summary: true, .. } => anomaly_summary(catalog),
        CatalogTable::Anomalies {
            provider,
            kind,
            json,
            ..
        } => anomalies(catalog, provider, kind, json),
        CatalogTable::Models { json } => models(catalog, json),
        CatalogTable::Regions { provider, json } => regions(catalog, provider, json),
    }
}

/// The widest table `catalog anomalies` prints, in terminal columns.
const ANOMALY_TABLE_WIDTH: usize = 120;

/// Longest instance type and region shown in the anomaly table (longer ones end in `…`),
/// so the reason keeps most of the width.
const ANOMALY_INSTANCE_WIDTH: usize = 26;
const ANOMALY_REGION_WIDTH: usize = 16;

/// One Markdown row per anomaly kind: rows flagged, what it means, one
/// example (the README's table of suspicious prices).
fn anomaly_summary(catalog: &Catalog) -> CliResult {
    println!("| kind | rows | what it means | example |");
    println!("|---|---:|---|---|");
    for kind in AnomalyKind::ALL {
        let rows: Vec<&Anomaly> = catalog
            .anomalies()
            .iter()
            .filter(|a| a.kind == kind)
            .collect();
        let example = rows
            .first()
            .map(|a| {
                format!(
                    "{} `{}` {}: {}",
                    a.provider, a.instance_type, a.region, a.reason
                )
            })
            .unwrap_or_else(|| "–".into());
        println!(
            "| `{kind}` | {} | {} | {example} |",
            rows.len(),
            kind.meaning()
        );
    }
    let offerings = catalog.offerings().len();
    let flagged: std::collections::BTreeSet<(&str, &str, &str)> = catalog
        .anomalies()
        .iter()
        .map(|a| {
            (
                a.provider.as_str(),
                a.instance_type.as_str(),
                a.region.as_str(),
            )
        })
        .collect();
    println!();
    println!(
        "{} flags on {} of {offerings} offering rows (instance and region; zones share a flag).",
        catalog.anomalies().len(),
        flagged.len()
    );
    Ok(())
}

fn anomalies(
    catalog: &Catalog,
    provider: Option<String>,
    kind: Option<AnomalyKind>,
    json: bool,
) -> CliResult {
    let rows = gpuplan_app::catalog::anomalies(catalog, provider.as_deref(), kind)?;
    if json {
        return print_json(&rows);
    }
    let kind_width = rows
        .iter()
        .map(|a| a.kind.as_str().len())
        .max()
        .unwrap_or(4);
    let provider_width = rows.iter().map(|a| a.provider.len()).max().unwrap_or(8);
    let instance_width = rows
        .iter()
        .map(|a| a.instance_type.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, ANOMALY_INSTANCE_WIDTH);
    let region_width = rows
        .iter()
        .map(|a| a.region.chars().count())
        .max()
        .unwrap_or(6)
        .clamp(6, ANOMALY_REGION_WIDTH);
    // Five columns: one border per side plus " │ " between cells = 3 × 5 + 1.
    let used = kind_width + provider_width.max(8) + instance_width + region_width + 16;
    let reason_width = ANOMALY_TABLE_WIDTH.saturating_sub(used).max(20);
    let mut t = table(&["kind", "provider", "instance", "region", "reason"]);
    for a in &rows {
        t.add_row(vec![
            a.kind.as_str().to_string(),
            a.provider.clone(),
            truncate(&a.instance_type, instance_width),
            truncate(&a.region, region_width),
            truncate(&a.reason, reason_width),
        ]);
    }
    println!("{t}");
    let on_demand = rows.iter().filter(|a| a.affects.on_demand()).count();
    let spot = rows.iter().filter(|a| a.affects.spot()).count();
    let offerings: std::collections::BTreeSet<(&str, &str, &str)> = rows
        .iter()
        .map(|a| {
            (
                a.provider.as_str(),
                a.instance_type.as_str(),
                a.region.as_str(),
            )
        })
        .collect();
    println!(
        "{} rows flagged ({on_demand} on-demand, {spot} spot) across {} offerings; --json gives the full reasons.",
        rows.len(),
        offerings.len()
    );
    Ok(())
}

fn gpus(catalog: &Catalog, filter: Option<String>, json: bool) -> CliResult {
    let rows = gpuplan_app::catalog::gpus(catalog, filter.as_deref());
    if json {
        return print_json(&rows);
    }
    let mut t = table(&[
        "GPU",
        "arch",
        "GiB",
        "HBM GB/s",
        "BF16 TF",
        "FP8 TF",
        "FP4 TF",
        "scale-up GB/s",
        "MIG",
    ]);
    for g in rows {
        t.add_row(vec![
            g.name.clone(),
            g.architecture.clone(),
            format!("{:.0}", g.memory_gib),
            format!("{:.0}", g.memory_bandwidth_gbps),
            opt(g.half_tflops(), 0),
            opt(g.fp8_tflops, 0),
            opt(g.fp4_tflops, 0),
            if g.pcie_only() {
                "PCIe".into()
            } else {
                format!("{:.0}", g.nvlink_gbps)
            },
            g.mig_max_instances.to_string(),
        ]);
    }
    println!("{t}");
    Ok(())
}

fn offerings(
    catalog: &Catalog,
    gpu: Option<String>,
    provider: Option<String>,
    region: Option<String>,
    limit: usize,
    json: bool,
) -> CliResult {
    let filter = gpuplan_app::catalog::OfferingFilter {
        gpu,
        provider,
        region,
        limit: Some(limit),
    };
    let rows = gpuplan_app::catalog::offerings(catalog, &filter)?;
    if json {
        return print_json(&rows);
    }
    let mut t = table(&[
        "provider",
        "instance",
        "GPU",
        "count",
        "region",
        "$/h",
        "spot $/h",
        "interconnect",
        "price snapshot",
    ]);
    for o in &rows {
        t.add_row(vec![
            o.provider.clone(),
            o.instance_type.clone(),
            o.gpu
                .clone()
                .unwrap_or_else(|| format!("{} (no spec)", o.accelerator)),
            format!("{}", o.accelerator_count),
            o.region.clone(),
            opt(o.price_per_hour, 2),
            opt(o.spot_price_per_hour, 2),
            o.interconnect.clone(),
            o.snapshot_date().unwrap_or("undated").to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "{} offerings shown, cheapest first (USD per instance-hour, list price).",
        rows.len()
    );
    Ok(())
}

#[derive(Serialize)]
struct Unresolved<'a> {
    accelerator: &'a str,
    offerings: usize,
    reason: &'static str,
}

fn unresolved_list(catalog: &Catalog, json: bool) -> CliResult {
    let rows: Vec<Unresolved> = catalog
        .unresolved_accelerators()
        .iter()
        .map(|(a, n)| Unresolved {
            accelerator: a,
            offerings: *n,
            reason: "no published vendor spec in gpus.csv: left out of plans",
        })
        .collect();
    if json {
        return print_json(&rows);
    }
    let mut t = table(&["accelerator", "offerings", "why excluded"]);
    for r in &rows {
        t.add_row(vec![
            r.accelerator.to_string(),
            r.offerings.to_string(),
            r.reason.to_string(),
        ]);
    }
    println!("{t}");
    Ok(())
}

fn models(catalog: &Catalog, json: bool) -> CliResult {
    if json {
        return print_json(&gpuplan_app::catalog::models(catalog));
    }
    let mut t = table(&[
        "model",
        "params (B)",
        "active (B)",
        "layers",
        "hidden",
        "heads/kv",
        "KV KiB/token bf16",
        "context",
        "kind",
    ]);
    for m in catalog.models() {
        let p = m.params();
        let kind = match (&m.moe, &m.mla, &m.encoder) {
            (_, _, Some(_)) => "encoder-decoder".to_string(),
            (Some(moe), Some(_), _) => {
                format!("MoE {}×top{} + MLA", moe.num_experts, moe.experts_per_token)
            }
            (Some(moe), None, _) => format!("MoE {}×top{}", moe.num_experts, moe.experts_per_token),
            _ => "dense".to_string(),
        };
        t.add_row(vec![
            m.id.clone(),
            format!("{:.2}", p.total() as f64 / 1e9),
            format!("{:.2}", p.active() as f64 / 1e9),
            m.num_layers.to_string(),
            m.hidden_size.to_string(),
            format!("{}/{}", m.num_attention_heads, m.num_kv_heads),
            format!(
                "{:.0}",
                (m.num_layers * m.kv_elements_per_token_per_layer() * 2) as f64 / 1024.0
            ),
            m.max_position_embeddings.to_string(),
            kind,
        ]);
    }
    println!("{t}");
    Ok(())
}

fn regions(catalog: &Catalog, provider: Option<String>, json: bool) -> CliResult {
    let rows = gpuplan_app::catalog::regions(catalog, provider.as_deref())?;
    if json {
        return print_json(&rows);
    }
    let mut t = table(&["provider", "region", "location", "country", "geo"]);
    for r in &rows {
        t.add_row(vec![
            r.provider.to_string(),
            r.region.to_string(),
            r.location.to_string(),
            r.country.to_string(),
            r.geo.join(" "),
        ]);
    }
    println!("{t}");
    println!(
        "{} regions; geo lists the `constraints.geo` codes each satisfies.",
        rows.len()
    );
    Ok(())
}
