//! How deployment tools name the catalog's accelerators: the Kubernetes
//! device-plugin resource, the node label NVIDIA's GPU feature discovery (GFD)
//! puts on a node, the host CPU architecture, and SkyPilot's accelerator names.

use gpuplan_catalog::GpuSpec;

/// The extended resource a vendor's Kubernetes device plugin advertises, by
/// `gpus.csv` vendor: NVIDIA's k8s-device-plugin `nvidia.com/gpu`, AMD's
/// k8s-device-plugin `amd.com/gpu`, Intel's Gaudi plugin `habana.ai/gaudi`,
/// the AWS Neuron plugin `aws.amazon.com/neuron`, GKE's `google.com/tpu`.
pub(crate) fn device_resource(gpu: &GpuSpec) -> Option<&'static str> {
    match gpu.vendor.as_str() {
        "NVIDIA" => Some("nvidia.com/gpu"),
        "AMD" => Some("amd.com/gpu"),
        "Intel" => Some("habana.ai/gaudi"),
        "AWS" => Some("aws.amazon.com/neuron"),
        "Google" => Some("google.com/tpu"),
        _ => None,
    }
}

/// The node label GFD sets to the GPU's product name.
pub(crate) const GFD_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";

/// One catalog GPU as the deployment tools name it.
struct Names {
    /// Catalog name (`gpus.csv` `name`).
    gpu: &'static str,
    /// `nvidia.com/gpu.product` as GFD sets it: the product name `nvidia-smi`
    /// (NVML) reports with spaces replaced by `-`. `None` where we have not
    /// seen the string a node of that GPU carries: the manifest then selects
    /// nodes by instance type alone.
    gfd_product: Option<&'static str>,
    /// The host is arm64 (Grace superchips), so pods need arm64 nodes and images.
    arm64_host: bool,
    /// SkyPilot's accelerator name (`sky show-gpus`), where SkyPilot lists the GPU.
    skypilot: Option<&'static str>,
}

/// Catalog GPUs → GFD product, host architecture, SkyPilot name. GFD strings
/// are those NVML reports (e.g. `NVIDIA H100 80GB HBM3` for the SXM5 80 GB
/// part, `Tesla T4`), as seen on clusters' `kubectl get nodes -L
/// nvidia.com/gpu.product`. SkyPilot names are those of its catalog (the same
/// names the bundled offerings carry; `tests::skypilot_names_match_the_offerings`
/// checks that); clouds that spell a GPU differently are in
/// [`SKYPILOT_CLOUD_NAMES`].
const NAMES: &[Names] = &[
    n("V100-SXM2-16GB", Some("Tesla-V100-SXM2-16GB"), Some("V100")),
    n(
        "V100-SXM2-32GB",
        Some("Tesla-V100-SXM2-32GB"),
        Some("V100-32GB"),
    ),
    n("T4-16GB", Some("Tesla-T4"), Some("T4")),
    n("P100-PCIe-16GB", Some("Tesla-P100-PCIE-16GB"), Some("P100")),
    n("A10-24GB", Some("NVIDIA-A10"), Some("A10")),
    n("A10G-24GB", Some("NVIDIA-A10G"), Some("A10G")),
    n("A30-24GB", Some("NVIDIA-A30"), Some("A30")),
    n("A40-48GB", Some("NVIDIA-A40"), Some("A40")),
    n("RTX-A4000-16GB", Some("NVIDIA-RTX-A4000"), Some("RTXA4000")),
    n("RTX-A4500-20GB", Some("NVIDIA-RTX-A4500"), Some("RTXA4500")),
    n("RTX-A5000-24GB", Some("NVIDIA-RTX-A5000"), Some("RTXA5000")),
    n("RTX-A6000-48GB", Some("NVIDIA-RTX-A6000"), Some("RTXA6000")),
    n(
        "RTX-3090-24GB",
        Some("NVIDIA-GeForce-RTX-3090"),
        Some("RTX3090"),
    ),
    n("A100-PCIe-40GB", Some("NVIDIA-A100-PCIE-40GB"), None),
    n("A100-SXM-40GB", Some("NVIDIA-A100-SXM4-40GB"), Some("A100")),
    n(
        "A100-PCIe-80GB",
        Some("NVIDIA-A100-80GB-PCIe"),
        Some("A100-80GB-PCIe"),
    ),
    n(
        "A100-SXM-80GB",
        Some("NVIDIA-A100-SXM4-80GB"),
        Some("A100-80GB"),
    ),
    n("L4-24GB", Some("NVIDIA-L4"), Some("L4")),
    n("L40-48GB", Some("NVIDIA-L40"), Some("L40")),
    n("L40S-48GB", Some("NVIDIA-L40S"), Some("L40S")),
    n(
        "RTX-4090-24GB",
        Some("NVIDIA-GeForce-RTX-4090"),
        Some("RTX4090"),
    ),
    n(
        "RTX-4000-Ada-20GB",
        Some("NVIDIA-RTX-4000-Ada-Generation"),
        Some("RTX4000-Ada"),
    ),
    n(
        "RTX-6000-Ada-48GB",
        Some("NVIDIA-RTX-6000-Ada-Generation"),
        Some("RTX6000-Ada"),
    ),
    n(
        "H100-PCIe-80GB",
        Some("NVIDIA-H100-PCIe"),
        Some("H100-PCIe"),
    ),
    n("H100-SXM-80GB", Some("NVIDIA-H100-80GB-HBM3"), Some("H100")),
    n("H100-NVL-94GB", Some("NVIDIA-H100-NVL"), Some("H100-NVL")),
    n("H200-SXM-141GB", Some("NVIDIA-H200"), Some("H200")),
    n("H200-NVL-141GB", Some("NVIDIA-H200-NVL"), None),
    Names {
        gpu: "GH200-96GB",
        gfd_product: Some("NVIDIA-GH200-480GB"),
        arm64_host: true,
        skypilot: Some("GH200"),
    },
    Names {
        gpu: "GB200-186GB",
        gfd_product: Some("NVIDIA-GB200"),
        arm64_host: true,
        skypilot: Some("GB200"),
    },
    n("B200-180GB", Some("NVIDIA-B200"), Some("B200")),
    n("B300-288GB", None, Some("B300")),
    n(
        "RTX-5090-32GB",
        Some("NVIDIA-GeForce-RTX-5090"),
        Some("RTX5090"),
    ),
    n("RTX-PRO-6000-Blackwell-96GB", None, Some("RTXPRO6000")),
    n("MI300X-192GB", None, Some("MI300X")),
    n("MI325X-256GB", None, Some("MI325X")),
];

/// A row with an x86-64 host.
const fn n(gpu: &'static str, gfd: Option<&'static str>, sky: Option<&'static str>) -> Names {
    Names {
        gpu,
        gfd_product: gfd,
        arm64_host: false,
        skypilot: sky,
    }
}

/// Clouds whose SkyPilot catalog spells a GPU differently from [`NAMES`]:
/// (SkyPilot cloud, catalog GPU, accelerator name).
const SKYPILOT_CLOUD_NAMES: &[(&str, &str, &str)] = &[
    ("runpod", "H100-SXM-80GB", "H100-SXM"),
    ("runpod", "H200-SXM-141GB", "H200-SXM"),
    ("runpod", "A100-SXM-80GB", "A100-80GB-SXM"),
    ("cudo", "H100-SXM-80GB", "H100-SXM"),
    ("cudo", "A800-PCIe-80GB", "A800-PCIe"),
    ("lambda", "RTX-A6000-48GB", "A6000"),
];

fn names(gpu: &str) -> Option<&'static Names> {
    NAMES.iter().find(|row| row.gpu == gpu)
}

/// `nvidia.com/gpu.product` of a catalog GPU, where known.
pub(crate) fn gfd_product(gpu: &str) -> Option<&'static str> {
    names(gpu).and_then(|row| row.gfd_product)
}

/// Whether the GPU's host CPU is arm64 (Grace superchips).
pub(crate) fn arm64_host(gpu: &str) -> bool {
    names(gpu).is_some_and(|row| row.arm64_host)
}

/// SkyPilot's accelerator name for a catalog GPU on a SkyPilot cloud.
pub(crate) fn skypilot_accelerator(cloud: &str, gpu: &str) -> Option<&'static str> {
    SKYPILOT_CLOUD_NAMES
        .iter()
        .find(|(c, g, _)| *c == cloud && *g == gpu)
        .map(|(_, _, name)| *name)
        .or_else(|| names(gpu).and_then(|row| row.skypilot))
}

/// Catalog providers that are SkyPilot clouds, with SkyPilot's cloud name
/// (`sky check` lists them; `sky.clouds.CLOUD_REGISTRY` in SkyPilot 0.14).
const SKYPILOT_CLOUDS: &[(&str, &str)] = &[
    ("aws", "aws"),
    ("gcp", "gcp"),
    ("azure", "azure"),
    ("lambda", "lambda"),
    ("runpod", "runpod"),
    ("oci", "oci"),
    ("cudo", "cudo"),
    ("fluidstack", "fluidstack"),
    ("paperspace", "paperspace"),
    ("do", "do"),
    ("vast", "vast"),
    ("nebius", "nebius"),
    ("hyperbolic", "hyperbolic"),
    ("seeweb", "seeweb"),
    ("ibm", "ibm"),
];

/// SkyPilot's name for a catalog provider, if SkyPilot can launch on it.
pub(crate) fn skypilot_cloud(provider: &str) -> Option<&'static str> {
    SKYPILOT_CLOUDS
        .iter()
        .find(|(p, _)| *p == provider)
        .map(|(_, cloud)| *cloud)
}

/// The catalog providers SkyPilot can launch on, for error messages.
pub(crate) fn skypilot_providers() -> Vec<&'static str> {
    SKYPILOT_CLOUDS.iter().map(|(p, _)| *p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuplan_catalog::Catalog;

    #[test]
    fn every_row_names_a_catalog_gpu() {
        let catalog = Catalog::embedded().unwrap();
        for row in NAMES {
            let spec = catalog.gpu(row.gpu).unwrap();
            assert_eq!(spec.name, row.gpu, "{} is an alias, not the name", row.gpu);
        }
        for (_, gpu, _) in SKYPILOT_CLOUD_NAMES {
            assert!(catalog.gpu(gpu).is_ok(), "{gpu}");
        }
    }

    /// The bundled offerings of SkyPilot clouds carry the accelerator name as
    /// their source (mostly SkyPilot's own catalog) writes it: the table
    /// must give that name for every GPU it lists, except spellings of one
    /// instance family, which the export takes from the offering row itself.
    #[test]
    fn skypilot_names_match_the_offerings() {
        let catalog = Catalog::embedded().unwrap();
        let mut wrong = Vec::new();
        for o in catalog.offerings() {
            let (Some(gpu), Some(cloud)) = (&o.gpu, skypilot_cloud(&o.provider)) else {
                continue;
            };
            // AWS g5g (Graviton) instances carry a `T4g`; vast's workstation
            // RTX PRO 6000 cards are `RTXPRO6000WS`.
            let instance_family = [("aws", "T4g"), ("vast", "RTXPRO6000WS")];
            if instance_family.contains(&(cloud, o.accelerator.as_str())) {
                continue;
            }
            if let Some(name) = skypilot_accelerator(cloud, gpu) {
                if name != o.accelerator {
                    wrong.push(format!("{cloud} {gpu}: {name} vs {}", o.accelerator));
                }
            }
        }
        wrong.sort();
        wrong.dedup();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn gfd_products_are_label_values() {
        // Label values: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends.
        for product in NAMES.iter().filter_map(|row| row.gfd_product) {
            assert!(product.len() <= 63, "{product}");
            assert!(product
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)));
            assert!(product.starts_with(|c: char| c.is_ascii_alphanumeric()));
            assert!(product.ends_with(|c: char| c.is_ascii_alphanumeric()));
        }
    }
}
