"""The command line: devices, show-kernel and run."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from simt_default import simt_default

from autogemm.cli import main


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_devices_table_and_json(device):
    out = invoke("devices")
    assert out.exit_code == 0 and device.fingerprint in out.output
    data = json.loads(invoke("devices", "--json").output)
    assert any(d["fingerprint"] == device.fingerprint for d in data)


def test_devices_say_which_threads_copy_for_a_device_of_memory_of_its_own(device, monkeypatch):
    from autogemm.shares import copying

    monkeypatch.setattr(copying, "native_copier", lambda: None)
    shown = {d["fingerprint"]: d["host_copies"] for d in json.loads(invoke("devices", "--json").output)}
    assert shown[device.fingerprint] is None and "host copies" not in invoke("devices").output    # shares memory
    monkeypatch.setattr(type(device), "shares_host_memory", property(lambda self: False))
    shown = {d["fingerprint"]: d["host_copies"] for d in json.loads(invoke("devices", "--json").output)}
    assert shown[device.fingerprint] == "Python threads" and "Python threads" in invoke("devices").output


def test_show_kernel_from_settings_and_json():
    out = invoke("show-kernel", "--dtype", "c", "--set", "tile_rows=8", "--set", "vector_width=2")
    assert out.exit_code == 0
    assert "#define TILE_ROWS 8" in out.output and "#define VW 2" in out.output and "__kernel" in out.output
    cfg = json.dumps({"layout": "NT", "assignment": "consecutive", "tile_k": 16})
    out = invoke("show-kernel", "--config", cfg, "--whole")
    assert out.exit_code == 0 and "layout NT" in out.output and "whole blocks only" in out.output


@pytest.mark.parametrize("dtype,types", [("b", "f32.bf16.bf16.f32"), ("s.tf32", "f32.tf32"), ("z", "f64")])
def test_show_kernel_fits_the_tensor_core_family_to_the_dtype(cache, dtype, types):
    """The family's default fitted to the dtype, where the device has no profile (the cache hides any): an
    instruction of the dtype's types, of the shapes the device takes (sm_90 has f64 shapes sm_80 has not)."""
    out = invoke("show-kernel", "--dtype", dtype, "--family", "nvidia_mma")
    assert out.exit_code == 0 and re.search(rf"instruction: mma\.sync m(8|16)n8k(4|8|16) {re.escape(types)}\b",
                                            out.output), out.output


def test_run_computes_16_bit_operands_where_no_instruction_takes_them(device):
    """A simt kernel that stages its operands in local memory reads bfloat16 as stored and computes in
    float32 (no launch converts them first); the class default of a CPU (the cpu family's), which reads
    them from global memory, takes them converted."""
    staged = json.dumps({**simt_default(device).to_dict(), "family": "simt", "local_a": True, "local_b": True})
    for settings in (("--config", staged), ()):
        out = invoke("run", "-M", "45", "-N", "37", "-K", "29", "--dtype", "bs", "--beta", "0.5", "-i", "1",
                     "--validate", "--timeline", *settings)
        assert out.exit_code == 0 and "PASS" in out.output, out.output
        if settings:
            assert "(to float32)" not in out.output
        elif not device.is_nvidia:
            assert "(to float32)" in out.output


def test_show_kernel_rejects_bad_config():
    out = invoke("show-kernel", "--set", "tile_rows=3")
    assert out.exit_code == 2 and "tile_rows=3" in out.output
    out = invoke("show-kernel", "--config", '{"layout": "XX"}')
    assert out.exit_code == 2 and "layout" in out.output
    out = invoke("show-kernel", "--config", '{"tile_k": "#include <evil>"}')
    assert out.exit_code == 2 and "integer" in out.output
    out = invoke("show-kernel", "--config", "tile_rows=8")          # neither JSON nor a file
    assert out.exit_code == 2 and "neither a JSON object nor a file" in out.output and "Traceback" not in out.output


def test_run_validates_and_reports_each_iteration(tmp_path):
    path = tmp_path / "run.json"
    out = invoke("run", "-M", "45", "-N", "37", "-K", "29", "--dtype", "d", "--trans-b", "T",
                 "--beta", "0.5", "-i", "3", "--validate", "--json", str(path))
    assert out.exit_code == 0, out.output
    assert out.output.count("iteration") == 3 and "PASS" in out.output
    written = json.loads(path.read_text())
    assert (written["m"], written["n"], written["k"], written["layout"]) == (45, 37, 29, "NT")
    assert len(written["seconds"]) == 3 and written["median_seconds"] > 0 and written["correct"] is True
    assert "command" in written and "commit" in written          # what made it


def test_run_validates_nan_and_inf_where_numpy_has_them():
    """Issue 57 D6: ``run --alpha nan --validate`` said FAIL although its NaN result was numpy's."""
    out = invoke("run", "-M", "40", "-N", "30", "-K", "20", "-i", "1", "--alpha", "nan", "--validate")
    assert out.exit_code == 0 and "PASS" in out.output, out.output


def test_run_timeline_shows_each_launch():
    out = invoke("run", "-M", "300", "-N", "200", "-K", "130", "--trans-a", "T", "-i", "1", "--edge", "pad",
                 "--timeline", "--set", "layout=NN")
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if " us  (" in line]
    assert [line.split("us)")[1].strip().split(" [")[0] for line in lines] == [
        "pack A (transpose)", "pack B", "gemm", "merge C"], out.output


def test_run_unknown_device_fails_cleanly():
    out = invoke("run", "-d", "no-such-device")
    assert out.exit_code == 2 and "no OpenCL device matches" in out.output


def test_show_kernel_and_run_take_the_subgroup_family():
    out = invoke("show-kernel", "--family", "subgroup", "--set", "tile_rows=2", "--dtype", "c")
    assert out.exit_code == 0 and "subgroup NN sg32x4 tile2x2 shuffle:local" in out.output, out.output
    config = '{"family": "subgroup", "subgroup": 8, "wg_rows": 2, "tile_rows": 2, "shuffle": "local"}'
    out = invoke("run", "-M", "40", "-N", "24", "-K", "19", "-i", "1", "--validate", "--config", config)
    assert out.exit_code == 0 and "PASS" in out.output and "subgroup NN sg8x2" in out.output, out.output


def test_a_file_the_cli_cannot_write_ends_in_one_line_and_status_2(cache, device, tmp_path):
    """Issue 57 D19: `profile export` into a folder that does not exist printed a FileNotFoundError
    traceback; every command that meets an OSError or a MemoryError ends with one line, as its own errors
    do."""
    from autogemm.profiles import Profile, save

    save(Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                 "2026-11-28T10:00:00+00:00", "60s"))
    missing = tmp_path / "no such folder" / "x.json"
    out = invoke("profile", "export", str(missing))
    assert out.exit_code == 2 and "Traceback" not in out.output
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "no such folder" in lines[0], out.output


def test_an_error_line_prints_brackets_and_colons_as_written(capsys):
    """Issue 57 D5: errors went through rich markup, so `dtypes[d][3]` printed as `dtypes[3]` and `:x:`
    as an emoji."""
    from autogemm.cli.common import fail

    with pytest.raises(SystemExit) as stop:
        fail("profile field dtypes[d][3] is wrong :x:")
    assert stop.value.code == 2
    assert "dtypes[d][3] is wrong :x:" in capsys.readouterr().out


def test_a_relative_cache_directory_is_one_error_line_in_every_command(monkeypatch):
    """Issue 57 D10: `devices` and `profile list` printed a 34-line traceback for a relative
    AUTOGEMM_CACHE_DIR where `run` and `tune` printed one line."""
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", "relative/cache")
    for command in (["devices"], ["profile", "list"]):
        out = invoke(*command)
        lines = out.output.strip().splitlines()
        assert out.exit_code == 2 and len(lines) == 1 and "AUTOGEMM_CACHE_DIR" in lines[0], (command, out.output)


def test_a_warning_in_a_command_is_one_line_without_the_librarys_source_path(monkeypatch):
    """Issue 57 D6: `devices` and `run` printed warnings as Python does, with the library's source path
    and line."""
    import warnings

    from autogemm.runtime.opencl import discovery

    real = discovery.devices

    def warning_devices(*args, **kwargs):
        warnings.warn("a driver said something", UserWarning, stacklevel=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(discovery, "devices", warning_devices)
    out = CliRunner().invoke(main, ["devices"])
    assert out.exit_code == 0, out.output
    assert "warning: a driver said something" in out.output and ".py:" not in out.output


def test_a_log_gets_no_lines_padded_with_spaces():
    """Rich pads tables and titles to the console's width; written to a log (not a terminal) each line
    ends where its text does."""
    for args in (["devices"], ["bench", "--sizes", "24", "--runs", "1", "--peers", "numpy"]):
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 0, out.output
        lines = out.output.splitlines()
        assert len(lines) > 3 and not [line for line in lines if line.endswith(" ")], out.output
