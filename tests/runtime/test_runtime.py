"""Device discovery, fingerprints, selection, the NVIDIA ICD fallback, the program cache, and builds in
worker processes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pytest
from click.testing import CliRunner

import autogemm
from autogemm.cli import main
from autogemm.runtime.opencl import context as context_module
from autogemm.runtime.opencl import discovery, timing
from autogemm.runtime.opencl.context import context_for


def test_devices_found_and_described():
    devices = autogemm.devices()
    assert devices
    for d in devices:
        assert d.name and d.compute_units > 0 and d.max_work_group_size > 0 and d.local_mem_bytes > 0
        assert len(d.fingerprint) == 16


def test_fingerprint_is_stable_and_ignores_slot(device):
    moved = dataclasses.replace(device, platform_index=7, device_index=3)
    assert moved.fingerprint == device.fingerprint
    assert dataclasses.replace(device, driver_version="other").fingerprint != device.fingerprint
    # a CPU driver reports the memory free at start-up: it must not change the fingerprint
    assert dataclasses.replace(device, device_type="CPU", global_mem_bytes=12345).fingerprint == \
        dataclasses.replace(device, device_type="CPU", global_mem_bytes=67890).fingerprint
    # nor the largest image PoCL derives from it (issue 57 D1: POCL_MEMORY_LIMIT moved a CPU's fingerprint)
    cpu = dataclasses.replace(device, device_type="CPU")
    assert dataclasses.replace(cpu, image2d_max=(16384, 16384), max_mem_alloc_bytes=4 << 30).fingerprint == \
        dataclasses.replace(cpu, image2d_max=(8192, 8192), max_mem_alloc_bytes=1 << 30).fingerprint
    gpu = dataclasses.replace(device, device_type="GPU")
    assert dataclasses.replace(gpu, global_mem_bytes=80 << 30).fingerprint != \
        dataclasses.replace(gpu, global_mem_bytes=40 << 30).fingerprint


def test_find_device_by_every_spec(device):
    slot = f"{device.platform_index}:{device.device_index}"
    assert autogemm.find_device(slot) == device
    assert autogemm.find_device(device.name.split()[0]) is not None
    assert autogemm.find_device(device.device_type.lower()).device_type == device.device_type
    with pytest.raises(autogemm.DeviceError, match="devices are"):
        autogemm.find_device("99:99")
    with pytest.raises(autogemm.DeviceError, match="printable"):
        autogemm.find_device("x\n" * 3)


def test_environment_variable_chooses_device(monkeypatch, device):
    monkeypatch.setenv("AUTOGEMM_DEVICE", f"{device.platform_index}:{device.device_index}")
    assert autogemm.default_device() == device
    monkeypatch.setenv("AUTOGEMM_DEVICE", "no-such-device")
    with pytest.raises(autogemm.DeviceError):
        autogemm.default_device()


def test_nvidia_icd_registered_when_library_present_but_unlisted(monkeypatch, tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "other.icd").write_text("/opt/other/libOther.so\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(vendors))
    monkeypatch.setattr(discovery, "_nvidia_library_loadable", lambda: True)
    monkeypatch.setattr(discovery.tempfile, "gettempdir", lambda: str(tmp_path))
    note = discovery.register_nvidia_icd()
    assert note and "OCL_ICD_VENDORS" in note
    made = discovery.os.environ["OCL_ICD_VENDORS"]
    assert made != str(vendors)
    names = {p.name: p.read_text().strip() for p in discovery.Path(made).glob("*.icd")}
    assert names["nvidia.icd"] == discovery.NVIDIA_LIBRARY
    assert names["other.icd"] == "/opt/other/libOther.so"


def test_nvidia_icd_left_alone_when_registered_or_absent(monkeypatch, tmp_path):
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    monkeypatch.setattr(discovery, "_nvidia_library_loadable", lambda: False)
    assert discovery.register_nvidia_icd() is None
    (tmp_path / "nv.icd").write_text("libnvidia-opencl.so.1\n")
    monkeypatch.setattr(discovery, "_nvidia_library_loadable", lambda: True)
    assert discovery.register_nvidia_icd() is None


def test_program_cache_builds_once(ctx):
    source = "__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2.0f; }"
    first = ctx.program(source)
    assert ctx.program(source) is first
    assert ctx.program(source, ("-cl-mad-enable",)) is not first
    assert context_for(ctx.device) is ctx


def test_build_error_carries_log(ctx):
    with pytest.raises(autogemm.BuildError) as info:
        ctx.program("__kernel void broken(__global float* x) { x[0] = undefined_name; }")
    assert "undefined_name" in str(info.value) or info.value.log


def test_a_compiler_that_does_not_know_the_cpu_is_named_as_the_cause(ctx, monkeypatch):
    """PoCL's LLVM fails every build on a CPU it does not know ('unknown target CPU'); the error says
    that the driver, not the kernel, is at fault."""
    def refuse(self, options=None, devices=None, cache_dir=None):
        raise cl.RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\nerror: unknown target CPU 'generic'")
    monkeypatch.setattr(cl.Program, "build", refuse)
    with pytest.raises(autogemm.BuildError, match="does not know this CPU") as info:
        ctx.program("__kernel void any_kernel(__global float* x) { x[0] = 1.0f; }")
    assert "unknown target CPU" in info.value.log
    monkeypatch.undo()
    with pytest.raises(autogemm.BuildError) as info:
        ctx.program("__kernel void broken(__global float* x) { x[0] = not_declared; }")
    assert "does not know this CPU" not in str(info.value)


def test_the_compiler_probe_says_whether_a_device_builds_and_why_not(device, monkeypatch):
    discovery.compiler_fault.cache_clear()
    assert discovery.compiler_fault(device) is None
    discovery.compiler_fault.cache_clear()

    def refuse(self, options=None, devices=None, cache_dir=None):
        raise cl.RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\nerror: unknown target CPU 'generic'")
    monkeypatch.setattr(cl.Program, "build", refuse)
    assert "does not know this CPU" in discovery.compiler_fault(device)
    discovery.compiler_fault.cache_clear()


def test_a_cpu_compiler_must_also_build_512_bit_multiply_adds(device, monkeypatch):
    """A CPU's compiler is asked for a 512-bit multiply-add too, built in a child process from source and
    again from its binary (PyPI's PoCL on a Zen 4 aborts there); a GPU's is not."""
    if device.device_type == "CPU":
        assert discovery.wide_vectors_fault(device) is None
    monkeypatch.setattr(discovery, "WIDE_PROBE_SOURCE", "__kernel void probe(__global float16 *x) { x[0] = y; }")
    assert "512-bit" in discovery.wide_vectors_fault(device)
    cpu, gpu = (dataclasses.replace(device, device_type=kind) for kind in ("CPU", "GPU"))
    asked = []
    monkeypatch.setattr(discovery, "wide_vectors_fault", lambda d: asked.append(d.device_type) or "no 512 bits")
    discovery.compiler_fault.cache_clear()
    assert discovery.compiler_fault(cpu) == "no 512 bits" and discovery.compiler_fault(gpu) is None
    assert asked == ["CPU"]
    discovery.compiler_fault.cache_clear()


def test_a_cpu_driver_that_builds_is_chosen_over_one_that_cannot(device, monkeypatch):
    """Two CPU drivers (PyPI's PoCL that cannot target the CPU, and one that can): the default device and
    'cpu' are the one that builds, whatever the platform order; with one CPU driver nothing is probed."""
    broken = dataclasses.replace(device, device_type="CPU", platform_index=0, device_index=0, name="broken")
    working = dataclasses.replace(device, device_type="CPU", platform_index=1, device_index=0, name="working")
    probed = []

    def fault(d):
        probed.append(d.name)
        return "cannot" if "broken" in d.name else None
    monkeypatch.setattr(discovery, "compiler_fault", fault)
    monkeypatch.delenv("AUTOGEMM_DEVICE", raising=False)
    monkeypatch.setattr(discovery, "devices", lambda: (broken, working))
    assert discovery.default_device().name == "working"
    assert discovery.find_device("cpu").name == "working"
    assert discovery.find_device("0:0").name == "broken"          # asked for by slot, it is given
    monkeypatch.setattr(discovery, "devices", lambda: (broken, dataclasses.replace(working, name="also broken")))
    assert discovery.default_device().name == "broken"            # none builds: the first, which will say why
    probed.clear()
    monkeypatch.setattr(discovery, "devices", lambda: (broken,))
    assert discovery.default_device().name == "broken" and not probed


def test_devices_check_names_each_compiler_and_fails_when_none_builds(device, monkeypatch):
    monkeypatch.setattr(discovery, "devices", lambda: (device,))
    monkeypatch.setattr(discovery, "compiler_fault", lambda d: None)
    result = CliRunner().invoke(main, ["devices", "--check"])
    assert result.exit_code == 0 and "builds kernels" in result.output
    monkeypatch.setattr(discovery, "compiler_fault", lambda d: "the driver's compiler does not know this CPU")
    result = CliRunner().invoke(main, ["devices", "--check"])
    assert result.exit_code != 0
    assert "cannot build" in result.output and "does not know this CPU" in result.output
    assert "no OpenCL device here builds kernels" in result.output
    # beside one that builds, a device that does not is only left unused: nothing to install
    other = dataclasses.replace(device, name="another driver's CPU")
    monkeypatch.setattr(discovery, "devices", lambda: (other, device))
    monkeypatch.setattr(discovery, "compiler_fault", lambda d: "does not know this CPU" if d is other else None)
    result = CliRunner().invoke(main, ["devices", "--check"])
    assert result.exit_code == 0 and "builds kernels" in result.output and "not used" in result.output
    assert "does not know this CPU" not in result.output and "install" not in result.output


def test_builds_in_worker_processes_give_working_programs(ctx):
    source = ("__kernel void thrice(__global float* x) { x[get_global_id(0)] *= 3.0f; }"
              "  // built in a worker process")
    with ctx.building_in_processes(2):
        program = ctx.program(source)
        with pytest.raises(autogemm.BuildError) as info:
            ctx.program("__kernel void broken(__global float* x) { x[0] = undefined_in_worker; }")
    assert "undefined_in_worker" in info.value.log
    data = np.arange(8, dtype=np.float32)
    buf = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    program.thrice(ctx.queue, (8,), None, buf)
    out = np.empty_like(data)
    cl.enqueue_copy(ctx.queue, out, buf).wait()
    assert np.array_equal(out, 3 * data)


def test_a_compiler_process_that_dies_fails_its_build_and_the_next_one_starts_anew(device):
    """The build pool's child is killed (as a crashing compiler would be): that build raises BuildError
    saying so, and the next build runs in a new child."""
    import os
    import signal

    from autogemm.runtime.opencl.build_pool import BuildPool
    source = "__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2.0f; }  // pool test"
    pool = BuildPool(device, 1)
    try:
        assert pool.compile(source)
        (child,) = pool._children
        os.kill(child._process.pid, signal.SIGKILL)
        with pytest.raises(autogemm.BuildError, match="died of SIGKILL"):
            pool.compile(source + " ")
        assert pool.compile(source + "  ") and child.restarts == 1 and child.generation == 2
    finally:
        pool.close()


def test_the_stored_layout_is_preferred_only_where_the_tuners_rates_do_not_hold():
    from autogemm.blas import GemmProblem, Op
    from autogemm.blas.selection import prefer_stored_layout
    from autogemm.codelets.nvidia_mma import MmaParams
    from autogemm.dtypes import DTYPES
    from autogemm.profiles import Ranked

    nt, nn, tn = (Ranked(MmaParams(layout=layout), rate) for layout, rate in (("NT", 45.0), ("NN", 41.0), ("TN", 42.0)))
    dense = GemmProblem.dense(DTYPES["d"], 64, 64, 64)
    assert prefer_stored_layout([nt, nn, tn], dense) is nt          # measured as stored: the rates include packs
    a_transposed = GemmProblem(DTYPES["d"], 64, 64, 64, Op.from_letter("T", "trans_a"), Op.from_letter("N", "trans_b"))
    assert prefer_stored_layout([nt, nn, tn], a_transposed) is tn   # no pack, within 0.9 of the best
    assert prefer_stored_layout([nt, nn, Ranked(tn.config, 30.0)], a_transposed) is nn  # one pack, not two
    assert prefer_stored_layout([nt, Ranked(nn.config, 30.0), Ranked(tn.config, 30.0)], a_transposed) is nt
    # a batch stored as measured: its class's rates held at the class's own size, where the layouts tied;
    # a pack of every matrix costs another size more (DGEMM 1024 x 64^3 on an H200: 6.8 against 10.8 TFLOP/s)
    batch = GemmProblem.dense(DTYPES["d"], 64, 64, 64, batch=1024)
    assert prefer_stored_layout([nt, nn, tn], batch) is nn
    assert prefer_stored_layout([nt, Ranked(nn.config, 30.0), tn], batch) is nt


def test_a_batch_of_small_matrices_weighs_every_ranked_block_and_a_single_product_its_classs_best(device):
    """``class_choice``: a class's best block is 64 x 64, its second 16 x 16 and slower. For one 64^3
    product each class's best stands; for a batch of 16 x 16 matrices, whose many work-groups keep the
    device busy whatever the block, the block that is all C is predicted faster and taken."""
    import dataclasses

    from autogemm.blas import GemmProblem, Op
    from autogemm.blas.selection import class_choice
    from autogemm.codelets.simt import SimtParams
    from autogemm.dtypes import DTYPES
    from autogemm.profiles import Profile, Ranked, SizeClassEntry

    large = SimtParams("NN", "offset", 8, 8, 8, 8, 8, 2, True, True)
    small = SimtParams("NN", "offset", 8, 8, 2, 2, 8, 2, True, True)
    assert (large.block_rows, large.block_cols, small.block_rows, small.block_cols) == (64, 64, 16, 16)
    entry = SizeClassEntry("small", (64, 64, 64), (Ranked(large, 1000.0), Ranked(small, 400.0)), "model", 2, 1.0)
    profile = Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                      "2026-11-28T10:00:00+00:00", "60s", dtypes={"s": (entry,)})
    one = GemmProblem.dense(DTYPES["s"], 16, 16, 16)
    assert class_choice(profile, one, 132, lambda config: True).config == large
    batch = dataclasses.replace(one, batch=4096)
    assert class_choice(profile, batch, 132, lambda config: True).config == small
    assert class_choice(profile, dataclasses.replace(batch, m=64, n=64), 132, lambda config: True).config == large
    # the layout preference holds for a batch too: a block passed over for the stored one does not return
    transposed = dataclasses.replace(large, layout="TN")
    stored_tn = dataclasses.replace(batch, m=64, n=64, op_a=Op(transposed=True))
    preferring = dataclasses.replace(profile, dtypes={"s": (dataclasses.replace(
        entry, ranked=(Ranked(large, 1000.0), Ranked(transposed, 905.0))),)})
    assert class_choice(preferring, stored_tn, 132, lambda config: True).config == transposed
    # a farther class's offer wins only where predicted PREDICTION_MARGIN times faster than the nearer's
    other = dataclasses.replace(small, tile_k=4)                 # the same 16 x 16 block, of another class
    far = SizeClassEntry("large", (4096, 4096, 4096), (Ranked(other, 430.0),), "model", 1, 1.0)
    two = dataclasses.replace(profile, dtypes={"s": (far, entry)})
    assert class_choice(two, batch, 132, lambda config: True).config == small          # 430 < 1.1 x 400
    only_large = dataclasses.replace(entry, ranked=(Ranked(large, 1000.0),))
    assert class_choice(dataclasses.replace(two, dtypes={"s": (far, only_large)}), batch, 132,
                        lambda config: True).config == other


def test_the_latency_classs_offer_stands_for_a_single_product_nearest_to_it(device):
    """A farther class's large block is predicted many times faster for a 64 x 64 x 250 product (the
    prediction counts the compute units blocks fill), but where the nearest class is the latency class,
    measured where a block's K steps decide the time, its small block is taken; not for a batch, and not
    where another class is nearer."""
    import dataclasses

    from autogemm.blas import GemmProblem
    from autogemm.blas.selection import class_choice
    from autogemm.codelets.simt import SimtParams
    from autogemm.dtypes import DTYPES
    from autogemm.profiles import Profile, Ranked, SizeClassEntry
    from autogemm.profiles.profile import LATENCY_CLASS

    large = SimtParams("NN", "offset", 8, 8, 8, 8, 8, 2, True, True)
    small = SimtParams("NN", "offset", 8, 8, 2, 2, 8, 2, True, True)
    tiny = SizeClassEntry(LATENCY_CLASS, (96, 96, 768), (Ranked(small, 1400.0),), "model", 1, 1.0)
    medium = SizeClassEntry("medium", (1536, 1536, 1536), (Ranked(large, 40000.0),), "model", 1, 1.0)
    profile = Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                      "2026-11-28T10:00:00+00:00", "60s", dtypes={"s": (medium, tiny)})
    product = GemmProblem.dense(DTYPES["s"], 64, 64, 250)
    assert class_choice(profile, product, 132, lambda config: True) == (small, LATENCY_CLASS)
    renamed = dataclasses.replace(profile, dtypes={"s": (medium, dataclasses.replace(tiny, name="small"))})
    assert class_choice(renamed, product, 132, lambda config: True).config == large
    assert class_choice(profile, dataclasses.replace(product, batch=64), 132, lambda config: True).config == large
    assert class_choice(profile, GemmProblem.dense(DTYPES["s"], 1024, 1024, 1024), 132,
                        lambda config: True).config == large


def test_a_batch_takes_its_batch_classs_configuration_and_a_single_product_never_does(device):
    """Entries measured on strided batches serve batches (nearest of them first) and round-trip through
    the profile's JSON; single products take the other classes', and a batch does too where the profile
    has no batch class, or where a class of single products is nearer its matrices' shape."""
    import dataclasses

    from autogemm.blas import GemmProblem
    from autogemm.blas.selection import class_choice
    from autogemm.codelets.simt import SimtParams
    from autogemm.dtypes import DTYPES
    from autogemm.profiles import Profile, Ranked, SizeClassEntry

    large = SimtParams("NN", "offset", 8, 8, 8, 8, 8, 2, True, True)
    small = SimtParams("NN", "offset", 8, 8, 2, 2, 8, 2, True, True)
    other = dataclasses.replace(small, tile_k=4)
    single = SizeClassEntry("small", (32, 32, 32), (Ranked(large, 900.0),), "model", 1, 1.0)
    batches = SizeClassEntry("batch-32", (32, 32, 32), (Ranked(small, 3000.0),), "model", 1, 1.0, batch=2048)
    wider = SizeClassEntry("batch-128", (128, 128, 128), (Ranked(other, 9000.0),), "model", 1, 1.0, batch=256)
    profile = Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                      "2026-11-28T10:00:00+00:00", "60s", dtypes={"s": (single, batches, wider)})
    profile = Profile.from_json(profile.to_json())
    assert profile.entry("s", "batch-32").batch == 2048 and profile.entry("s", "small").batch == 1
    assert [e.name for e in profile.nearest(("s",), 32, 32, 32)] == ["small"]
    assert [e.name for e in profile.nearest(("s",), 32, 32, 32, batched=True)] == ["batch-32", "batch-128"]
    one = GemmProblem.dense(DTYPES["s"], 24, 24, 24)
    assert class_choice(profile, one, 132, lambda config: True).config == large
    assert class_choice(profile, GemmProblem.dense(DTYPES["s"], 24, 24, 24, batch=512), 132,
                        lambda config: True) == (small, "batch-32")
    assert class_choice(profile, GemmProblem.dense(DTYPES["s"], 160, 160, 160, batch=64), 132,
                        lambda config: True) == (other, "batch-128")
    without = dataclasses.replace(profile, dtypes={"s": (single,)})
    assert class_choice(without, GemmProblem.dense(DTYPES["s"], 24, 24, 24, batch=512), 132,
                        lambda config: True).config == large
    big = SizeClassEntry("large", (1024, 1024, 1024), (Ranked(large, 9000.0),), "model", 1, 1.0)
    with_big = dataclasses.replace(profile, dtypes={"s": (single, batches, wider, big)})
    assert class_choice(with_big, GemmProblem.dense(DTYPES["s"], 900, 900, 900, batch=8), 132,
                        lambda config: True).config == large
    assert class_choice(with_big, GemmProblem.dense(DTYPES["s"], 160, 160, 160, batch=64), 132,
                        lambda config: True).config == other
    # no batch class's configuration usable (a borrowed one failed here): the single products' classes
    assert class_choice(profile, GemmProblem.dense(DTYPES["s"], 24, 24, 24, batch=512), 132,
                        lambda config: config == large).config == large


def test_a_buffer_pool_rounds_sizes_up_and_keeps_no_more_than_its_capacity(ctx):
    from autogemm.runtime.opencl.buffer_pool import BufferPool, rounded

    assert [rounded(n) for n in (1, 256, 257, 2**20, 2**20 + 1)] == [256, 256, 320, 2**20, 2**20 + 2**18]
    pool = BufferPool(ctx.context, capacity=2**20)
    first, second = pool.take(600_000), pool.take(590_000)
    assert first.size == second.size == 655_360 and first is not second
    pool.give(first, 600_000)
    pool.give(second, 590_000)            # past the capacity: released, not kept
    assert pool.held == 655_360 and pool.take(640_000) is first and pool.held == 0
    pool.give(first, 640_000)
    pool.clear()
    assert pool.held == 0 and pool.take(600_000) is not first


def test_a_call_given_back_all_at_once_takes_each_buffer_back_in_its_place(ctx):
    """``give_all`` gives a call's buffers back last first, so that the next call taking the same sizes
    in the same order gets each buffer where it was (its kernels' arguments unchanged)."""
    from autogemm.runtime.opencl.buffer_pool import BufferPool

    pool = BufferPool(ctx.context, capacity=2**20)
    taken = [(pool.take(4096), 4096) for _ in range(3)]
    for _ in range(2):
        pool.give_all(taken)
        again = [(pool.take(4096), 4096) for _ in range(3)]
        assert [buffer for buffer, _ in again] == [buffer for buffer, _ in taken]


def test_timed_work_waits_behind_a_hold_and_every_timing_holds_first(ctx, monkeypatch):
    """What a timing measures waits in the queue behind the hold (so its events count the work alone),
    and the context's timing, ``time_enqueue`` and the hold agree on the queue."""
    data = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, 1 << 20)
    held = timing.hold(ctx.queue)
    work = cl.enqueue_fill_buffer(ctx.queue, data, np.float32(1), 0, 1 << 20)
    work.wait()
    assert held.profile.end > held.profile.start
    assert work.profile.start >= held.profile.end
    queues = []
    monkeypatch.setattr(timing, "hold", lambda queue: queues.append(queue))
    monkeypatch.setattr(context_module, "hold", lambda queue: queues.append(queue))

    def fill() -> list[cl.Event]:
        return [cl.enqueue_fill_buffer(ctx.queue, data, np.float32(2), 0, 1 << 20)]

    assert ctx.seconds(fill, repeats=2) > 0
    assert len(timing.time_enqueue(ctx.queue, fill, warmup=1, runs=3)) == 3
    assert queues == [ctx.queue] * 4
