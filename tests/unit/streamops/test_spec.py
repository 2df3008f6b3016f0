"""Job specs: validation naming every bad field, durations, args placeholders, encoding."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from streamops.exceptions import ConfigError
from streamops.settings import PROJECT_ROOT
from streamops.spec import (
    JobSpec,
    ProcessingGuarantee,
    Resources,
    decode_spec,
    encode_spec,
    load_spec,
    parse_duration,
    spec_from_dict,
)

JOB_SPECS = sorted((PROJECT_ROOT / "config" / "jobs").glob("*.yaml"))


def minimal(**fields: Any) -> dict[str, Any]:
    return {"name": "fleet-pings", "version": "1", "entrypoint": "spark_jobs.fleet_pings", **fields}


def config_error(data: Any, source: str = "<spec>") -> str:
    with pytest.raises(ConfigError) as info:
        spec_from_dict(data, source=source)
    return str(info.value)


# --- durations -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2 seconds", 2.0),
        ("1 second", 1.0),
        ("10s", 10.0),
        ("3 sec", 3.0),
        ("1.5 s", 1.5),
        ("500ms", 0.5),
        ("250 milliseconds", 0.25),
        ("1 millisecond", 0.001),
        ("5 millis", 0.005),
        ("1 min", 60.0),
        ("2m", 120.0),
        ("3 minutes", 180.0),
        ("1 minute", 60.0),
        ("  2 seconds  ", 2.0),
        ("0 s", 0.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["soon", "", "2", "-1 s", "2 hours", "1e3 s", "s", "1,5 s"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


# --- validation ----------------------------------------------------------------------------
def test_minimal_spec_defaults() -> None:
    spec = spec_from_dict(minimal())
    assert spec.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE
    assert (spec.trigger_interval, spec.trigger_seconds) == ("2 seconds", 2.0)
    assert spec.resources == Resources()
    assert (spec.args, spec.classpath_jars, spec.conf, spec.description) == ({}, [], {}, "")


def test_full_spec() -> None:
    spec = spec_from_dict(minimal(
        description="d", args={"n": 3, "ratio": 0.5, "flag": True, "path": "{state_root}/x"},
        processing_guarantee="at_least_once", trigger_interval="500 ms",
        resources={"driver_cores": 2, "driver_memory": "2G", "executor_memory": "512m",
                   "executor_cores": 2, "max_cores": 8},
        classpath_jars=["/opt/jars/a.jar"], conf={"spark.sql.shuffle.partitions": "8"},
    ))  # fmt: skip
    assert spec.processing_guarantee is ProcessingGuarantee.AT_LEAST_ONCE
    assert spec.trigger_seconds == 0.5
    assert spec.resources.driver_memory == "2g"  # memory sizes are lower-cased
    assert spec.conf == {"spark.sql.shuffle.partitions": "8"}
    assert spec.args["n"] == 3 and spec.args["flag"] is True


def test_every_bad_field_is_named_at_once() -> None:
    message = config_error(
        {
            "name": "Bad Name",
            "version": "",
            "entrypoint": "not a module!",
            "processing_guarantee": "maybe",
            "trigger_interval": "soon",
            "resources": {"driver_memory": "lots", "max_cores": 0, "gpus": 1},
            "conf": {"foo": "1", "spark.ok": "2", "bar": "3"},
            "args": {"x": [1, 2]},
            "bogus": 1,
        },
        source="config/jobs/bad.yaml",
    )
    assert message.startswith("config/jobs/bad.yaml: invalid job spec\n")
    lines = message.splitlines()[1:]
    fields = {line.strip().split(":", 1)[0] for line in lines}
    assert {
        "name",
        "version",
        "entrypoint",
        "processing_guarantee",
        "trigger_interval",
        "resources.driver_memory",
        "resources.max_cores",
        "resources.gpus",
        "conf",
        "bogus",
    } <= fields
    assert any(f.startswith("args.x") for f in fields)
    assert "invalid job name 'Bad Name'" in message
    assert "'not a module!' is not a dotted Python module name" in message
    assert "'soon' is not a duration" in message
    assert "'lots' is not a memory size" in message
    assert "keys must start with 'spark.': foo, bar" in message
    assert "Value error, " not in message


def test_missing_required_fields_are_named() -> None:
    message = config_error({"description": "no identity"})
    for field in ("name", "version", "entrypoint"):
        assert f"  {field}: Field required" in message


def test_zero_trigger_interval_is_refused() -> None:
    assert "trigger_interval: must be greater than zero" in config_error(
        minimal(trigger_interval="0 s")
    )


@pytest.mark.parametrize("name", ["..", "a/b", "Fleet", "x" * 64, ""])
def test_unsafe_job_names_are_refused(name: str) -> None:
    assert "  name: invalid job name" in config_error(minimal(name=name))


@pytest.mark.parametrize("data", [None, [], "name: x", 3])
def test_spec_must_be_a_mapping(data: Any) -> None:
    assert "a job spec must be a mapping of fields" in config_error(data)


def test_spec_is_frozen() -> None:
    spec = spec_from_dict(minimal())
    with pytest.raises(ValueError):
        spec.version = "2"  # type: ignore[misc]


# --- args ----------------------------------------------------------------------------------
def test_resolved_args_fill_placeholders() -> None:
    spec = spec_from_dict(minimal(args={
        "alpha_dir": "{state_root}/data/alpha", "url": "http://{host}:8000/pings",
        "plain": "no placeholder", "n": 5, "flag": False,
    }))  # fmt: skip
    args = spec.resolved_args(state_root="/srv/state", host="10.0.0.1")
    assert args == {
        "alpha_dir": "/srv/state/data/alpha",
        "url": "http://10.0.0.1:8000/pings",
        "plain": "no placeholder",
        "n": 5,
        "flag": False,
    }
    assert spec.args["alpha_dir"] == "{state_root}/data/alpha"  # the spec is unchanged


def test_resolved_args_unknown_placeholder() -> None:
    spec = spec_from_dict(minimal(args={"store_url": "sqlite:///{state_dir}/fleet.db"}))
    with pytest.raises(ConfigError) as info:
        spec.resolved_args(state_root="/srv", host="h")
    message = str(info.value)
    assert "job spec fleet-pings: args.store_url uses unknown placeholder 'state_dir'" in message
    assert "known: host, state_root" in message


@pytest.mark.parametrize("value", ["{}", "{0}", "{", "}"])
def test_resolved_args_bad_brace_is_a_config_error(value: str) -> None:
    spec = spec_from_dict(minimal(args={"template": value}))
    with pytest.raises(ConfigError, match="args.template"):
        spec.resolved_args(state_root="/srv")


def test_resolved_args_escaped_braces() -> None:
    spec = spec_from_dict(minimal(args={"json": '{{"root": "{state_root}"}}'}))
    assert spec.resolved_args(state_root="/srv") == {"json": '{"root": "/srv"}'}


# --- encoding ------------------------------------------------------------------------------
def test_encode_decode_round_trip() -> None:
    spec = spec_from_dict(minimal(
        args={"a": "{state_root}/x y", "n": 2, "f": 1.5, "b": True},
        conf={"spark.x": "1"}, classpath_jars=["/j/a b.jar"], description="ünïcode ✓",
        processing_guarantee="none",
    ))  # fmt: skip
    token = encode_spec(spec)
    assert token.isascii() and not any(c in token for c in " /+\n'\"")
    assert decode_spec(token) == spec


@pytest.mark.parametrize("token", ["***", "bm90IGpzb24=", base64.b64encode(b"[1").decode()])
def test_decode_refuses_garbage(token: str) -> None:
    with pytest.raises(ConfigError, match="not valid base64 JSON"):
        decode_spec(token)


def test_decode_validates_the_spec() -> None:
    token = base64.urlsafe_b64encode(json.dumps(minimal(version="")).encode()).decode()
    with pytest.raises(ConfigError, match=r"submitted spec: invalid job spec\n  version:"):
        decode_spec(token)


# --- files ---------------------------------------------------------------------------------
def test_the_repository_has_job_specs() -> None:
    assert JOB_SPECS


@pytest.mark.parametrize("path", JOB_SPECS, ids=[p.stem for p in JOB_SPECS])
def test_repository_job_specs_load(path: Path) -> None:
    spec = load_spec(path)
    # <job>.yaml, or <job>-v<version>.yaml for another version of the same job
    assert path.stem in (spec.name, f"{spec.name}-v{spec.version}")
    assert spec.trigger_seconds > 0
    resolved = spec.resolved_args(state_root="/srv/state")
    assert not any("{" in str(v) for v in resolved.values())
    assert decode_spec(encode_spec(spec)) == spec


def test_load_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read job spec .*missing.yaml"):
        load_spec(tmp_path / "missing.yaml")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_spec(bad_yaml)
    a_list = tmp_path / "list.yaml"
    a_list.write_text("- name: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="list.yaml: a job spec must be a mapping"):
        load_spec(a_list)
    bad_field = tmp_path / "field.yaml"
    bad_field.write_text("name: x\nversion: '1'\nentrypoint: a.b\ntrigger_interval: never\n")
    with pytest.raises(ConfigError, match=r"field.yaml: invalid job spec\n  trigger_interval:"):
        load_spec(bad_field)


def test_job_spec_class_is_the_model() -> None:
    assert isinstance(spec_from_dict(minimal()), JobSpec)
