"""inventories/example: families as groups, the specification's defaults, the serving recipes."""
from pathlib import Path

import yaml

TOP = Path(__file__).resolve().parents[3]
INV = TOP / "inventories" / "example"


def _yaml(path):
    return yaml.safe_load(path.read_text())


def test_groups_by_family():
    hosts = _yaml(INV / "hosts.yml")
    families = hosts["jetsons"]["children"]
    assert set(families) == {"thor", "agx_orin", "orin_nx", "orin_nano"}
    assert all(families[name]["hosts"] for name in families)


def test_spec_defaults_are_the_role_defaults():
    group = _yaml(INV / "group_vars" / "jetsons.yml")
    defaults = _yaml(TOP / "roles" / "speculative_decoding" / "defaults" / "main.yml")
    spec_vars = {k: v for k, v in group.items() if k.startswith("jetson_spec_")}
    assert len(spec_vars) >= 10
    for key, value in spec_vars.items():
        assert value == defaults[key], key
    assert group["vllm_gpu_memory_utilization"] == 0.75
    assert "vault_hf_token" in group["vllm_hf_token"]


def test_serving_recipes():
    thor = _yaml(INV / "group_vars" / "thor.yml")
    assert thor["vllm_image"].startswith("vllm/vllm-openai") and thor["vllm_max_model_len"] == 8192
    for family in ("agx_orin", "orin_nx", "orin_nano"):
        recipe = _yaml(INV / "group_vars" / ("%s.yml" % family))
        assert recipe["vllm_image"] == "ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin", family
        assert recipe["vllm_max_model_len"] == 4096, family
    r39 = _yaml(INV / "host_vars" / "agx-orin-r39.yml")
    assert r39["vllm_image"].startswith("vllm/vllm-openai")
