#!/usr/bin/env python3
"""Validates gpuplan's exports with the real tools' schemas, offline.

Usage: validate_exports.py DIR...  (each DIR holds what `gpuplan plan W --export
k8s|skypilot|engine -o DIR` wrote). Run it through scripts/validate-exports.sh,
which provides a virtualenv with the pinned tools
(scripts/export-validation-requirements.txt).

- k8s.yaml: every object with kubernetes-validate (the Kubernetes OpenAPI
  schemas it bundles, strict: unknown fields are errors) at K8S_VERSION, the
  version gpuplan builds its objects for. A LeaderWorkerSet is a custom
  resource kubernetes-validate has no schema for: its own fields are checked
  against scripts/leaderworkerset.schema.json (written from the LWS CRD), and
  its leader and worker pod templates with kubernetes-validate as PodTemplates.
- skypilot.yaml: SkyPilot's task schema (the first step of sky.Task.from_yaml),
  then sky.Task.from_yaml_config on everything but `resources`, which parses
  setup/run/num_nodes and the SkyServe `service` section with SkyServe's own
  parser; `resources` is checked by the schema and each cloud must be one
  SkyPilot registers. Instance types and accelerator names are not looked up:
  SkyPilot's catalog of them is downloaded from GitHub, and this runs offline.
- mig-parted.yaml (fleets): mig-parted's v1 config structure (it is a Go tool
  with no Python loader).
- vllm-serve.sh and (training) train.sh: `bash -n`; a training skypilot.yaml
  has no `service` section. vllm-config.yaml: loads as a YAML mapping of flag
  names (vLLM itself is not installed here: a multi-GB CUDA package).
Exit status 1 if anything is invalid.
"""

import copy
import json
import os
import pathlib
import subprocess
import sys

# No telemetry, no usage reports, no API server: nothing leaves the machine.
os.environ.setdefault("SKYPILOT_DISABLE_USAGE_COLLECTION", "1")
os.environ.setdefault("SKYPILOT_DEBUG", "0")

import jsonschema  # noqa: E402  (a dependency of kubernetes-validate)
import kubernetes_validate  # noqa: E402
import yaml  # noqa: E402

K8S_VERSION = "1.37.0"
HERE = pathlib.Path(__file__).resolve().parent
LWS_SCHEMA = json.loads((HERE / "leaderworkerset.schema.json").read_text())


def check_k8s_object(obj, where):
    """Errors of one Kubernetes object (empty when valid)."""
    if obj.get("kind") == "LeaderWorkerSet":
        return check_leader_worker_set(obj, where)
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{where}: {e.message} at {'.'.join(map(str, e.path))}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"{where}: no Kubernetes {K8S_VERSION} schema: {e}"]
    return []


def check_leader_worker_set(obj, where):
    """The LWS fields by the CRD's schema; its pod templates by Kubernetes'."""
    errors = [
        f"{where}: {e.message} at {'.'.join(map(str, e.path))}"
        for e in jsonschema.Draft7Validator(LWS_SCHEMA).iter_errors(obj)
    ]
    template = obj.get("spec", {}).get("leaderWorkerTemplate", {})
    for role in ("leaderTemplate", "workerTemplate"):
        if role in template:
            pod_template = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": obj["metadata"]["name"]},
                "template": template[role],
            }
            errors += check_k8s_object(pod_template, f"{where} {role}")
    return errors


def check_k8s(path):
    errors, kinds = [], []
    for i, obj in enumerate(yaml.safe_load_all(path.read_text())):
        where = f"{path} document {i + 1} ({obj.get('kind')})"
        kinds.append(obj.get("kind"))
        errors += check_k8s_object(obj, where)
    print(f"  kubernetes-validate {K8S_VERSION} (strict): {', '.join(kinds)}")
    return errors


def check_skypilot(path):
    import sky
    from sky.utils import common_utils, registry, schemas

    config = yaml.safe_load(path.read_text())
    try:
        common_utils.validate_schema(
            copy.deepcopy(config), schemas.get_task_schema(), "Invalid task YAML: "
        )
        rest = copy.deepcopy(config)
        resources = rest.pop("resources", {})
        task = sky.Task.from_yaml_config(rest)
    except Exception as e:  # SkyPilot raises ValueError and its own exceptions
        return [f"{path}: {type(e).__name__}: {e}"]
    errors = []
    # A serving task is a SkyServe service; a training task (train.sh beside it) has none.
    training = (path.parent / "train.sh").exists()
    if task.service is None and not training:
        errors.append(f"{path}: no SkyServe service section")
    for candidate in resources.get("any_of", [resources]):
        cloud = candidate.get("cloud")
        if cloud is not None and registry.CLOUD_REGISTRY.from_str(cloud) is None:
            errors.append(f"{path}: SkyPilot has no cloud {cloud!r}")
    if training:
        what = f"training task on {task.num_nodes} node(s)"
    else:
        policy = config["service"]["replica_policy"]
        what = (
            f"service {policy['min_replicas']}..{policy['max_replicas']} replicas at "
            f"{policy['target_qps_per_replica']} qps"
        )
    print(
        f"  skypilot {sky.__version__}: task schema, Task.from_yaml_config ({what}), "
        "clouds registered; catalog lookups skipped (offline)"
    )
    return errors


def check_mig_parted(path):
    """mig-parted's config format (NVIDIA/mig-parted pkg/mig/config): version v1,
    named configs, each a list of device filters with mig-enabled and a map of
    MIG profile names to counts. mig-parted is a Go tool with no Python
    loader, so the structure is checked here."""
    import re

    config = yaml.safe_load(path.read_text())
    errors = []
    if config.get("version") != "v1":
        errors.append(f"{path}: version must be v1")
    configs = config.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        return errors + [f"{path}: mig-configs must be a non-empty mapping"]
    profile = re.compile(r"^[1-7]g\.[0-9]+gb(\+me|-me|\+gfx|\+me\.all)?$")
    for name, entries in configs.items():
        for entry in entries:
            if set(entry) - {"devices", "mig-enabled", "mig-devices"}:
                errors.append(f"{path}: {name}: unknown keys {sorted(set(entry) - {'devices', 'mig-enabled', 'mig-devices'})}")
            if entry.get("devices") != "all" and not isinstance(entry.get("devices"), list):
                errors.append(f"{path}: {name}: devices must be 'all' or a list of indices")
            if not isinstance(entry.get("mig-enabled"), bool):
                errors.append(f"{path}: {name}: mig-enabled must be a boolean")
            for prof, count in (entry.get("mig-devices") or {}).items():
                if not profile.match(prof) or not isinstance(count, int) or count < 1:
                    errors.append(f"{path}: {name}: bad MIG device {prof}: {count}")
    print(f"  mig-parted v1 structure: {len(configs)} named configs")
    return errors


def check_engine(directory):
    errors = []
    for script in (directory / "vllm-serve.sh", directory / "train.sh"):
        if script.exists():
            run = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
            if run.returncode != 0:
                errors.append(f"{script}: {run.stderr.strip()}")
    script = directory / "vllm-serve.sh"
    config = directory / "vllm-config.yaml"
    if config.exists():
        data = yaml.safe_load(config.read_text())
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and not k.startswith("-") for k in data
        ):
            errors.append(f"{config}: expected a mapping of vLLM flag names")
    if script.exists() or config.exists():
        print("  engine: bash -n vllm-serve.sh, vllm-config.yaml is a flag mapping")
    return errors


def main(directories):
    if not directories:
        print(__doc__)
        return 2
    errors = []
    for directory in map(pathlib.Path, directories):
        print(directory)
        if (directory / "k8s.yaml").exists():
            errors += check_k8s(directory / "k8s.yaml")
        if (directory / "skypilot.yaml").exists():
            errors += check_skypilot(directory / "skypilot.yaml")
        if (directory / "mig-parted.yaml").exists():
            errors += check_mig_parted(directory / "mig-parted.yaml")
        errors += check_engine(directory)
    for e in errors:
        print(f"INVALID {e}", file=sys.stderr)
    print(f"{len(directories)} export directories: {'all valid' if not errors else f'{len(errors)} errors'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
