"""The deployment files, checked by reading them: docker-compose.yml against the compose spec (the
JSON schema that check-jsonschema vendors), the Grafana dashboard's structure and the metrics it
queries (each must be one the code registers), the Prometheus scrape example."""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from typing import Any

import jsonschema
import prometheus_client
import yaml

from memory import metrics
from tests import cli, test_compose

DEPLOY = cli.ROOT / "deploy"


def compose_errors(data: Any) -> list[str]:
    schema = json.loads(
        resources.files("check_jsonschema.builtin_schemas.vendor")
        .joinpath("compose-spec.json")
        .read_text(encoding="utf-8")
    )
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


compose = test_compose.compose


def test_the_compose_file_validates_against_the_compose_spec(compose: dict[str, Any]) -> None:
    assert compose_errors(compose) == []
    broken = copy.deepcopy(compose)
    broken["services"]["bot"]["healthcheck"]["test"] = 42
    broken["services"]["worker"]["restart_policy"] = "always"
    found = " ".join(compose_errors(broken))  # the check does reject a wrong file
    assert "['services', 'bot', 'healthcheck', 'test']: 42 is not valid" in found
    assert "'restart_policy' was unexpected" in found


def test_bot_and_worker_serve_metrics_and_the_bot_has_a_healthcheck(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    for app in ("bot", "worker"):
        env = services[app]["environment"]
        assert (
            env["LIVEMEMORY_METRICS_PORT"] == "9108" and env["LIVEMEMORY_METRICS_HOST"] == "0.0.0.0"
        )
        assert "9108" in services[app]["expose"]
    test = " ".join(services["bot"]["healthcheck"]["test"])
    assert "http://127.0.0.1:9108/metrics" in test


def test_the_dashboard_is_a_compose_service(compose: dict[str, Any]) -> None:
    web = compose["services"]["web"]
    assert web["command"] == ["python", "-m", "bot", "web"]
    assert web["environment"]["LIVEMEMORY_WEB__HOST"] == "0.0.0.0"
    assert web["ports"] == ["127.0.0.1:8080:8080"]
    assert "QDRANT_URL" in web["environment"]  # beside the bot: a Qdrant server, never the folder


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DEPLOY / "grafana" / "livememory.json").read_text())
    return data


def registered_metric_names() -> set[str]:
    """Every series name the processes register (bot and worker), as Prometheus exposes them."""
    registry = prometheus_client.CollectorRegistry()
    metrics.MemoryMetrics(registry)  # with its OperatorMetrics
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"], "gauge": [""]}
    return {
        family.name + suffix for family in registry.collect() for suffix in suffixes[family.type]
    }


def test_the_grafana_dashboard_loads_and_queries_only_metrics_that_exist() -> None:
    dashboard = _dashboard()
    for key in ("title", "uid", "schemaVersion", "panels", "time", "templating"):
        assert key in dashboard, key
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels) >= 10
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        assert panel["type"] in {"timeseries", "stat", "gauge", "bargauge", "table"}, panel
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in ("h", "w", "x", "y"))
        assert grid["x"] + grid["w"] <= 24
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not area & cells, f"panel {panel['title']} overlaps another"
        cells |= area
        assert panel["targets"] and all(t["expr"] and t["refId"] for t in panel["targets"])
    known = registered_metric_names()
    used = {
        name
        for panel in panels
        for target in panel["targets"]
        for name in re.findall(r"\b(livememory_[a-z_]+)\b", target["expr"])
    }
    assert used and used <= known, used - known
    for wanted in (
        "livememory_turn_seconds_bucket",
        "livememory_model_seconds_bucket",
        "livememory_jobs",
        "livememory_jobs_oldest_todo_seconds",
        "livememory_job_attempts_total",
        "livememory_chat_messages_total",
        "livememory_chat_rate_limited_total",
        "livememory_commands_total",
    ):
        assert wanted in used, wanted


def test_the_prometheus_example_scrapes_bot_and_workers() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["livememory-bot"]["static_configs"][0]["targets"] == ["bot:9108"]
    assert jobs["livememory-worker"]["dns_sd_configs"][0]["port"] == 9108
