"""The execution configuration of a PyTorch process, as a samebits run file records it (never part
of the experiment: none of it is meant to change the mathematics), and the texts of a Recorder's
experiment (what the user declares, the model's tensors) in samebits' INI form."""
import platform

import torch


def _flag(get):
    try:
        return str(get())
    except (AttributeError, RuntimeError):
        return "n/a"


def environment():
    """One 'name: value' line per flag that decides how PyTorch computes."""
    lines = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "deterministic_algorithms": _flag(torch.are_deterministic_algorithms_enabled),
        "cudnn.deterministic": _flag(lambda: torch.backends.cudnn.deterministic),
        "cudnn.benchmark": _flag(lambda: torch.backends.cudnn.benchmark),
        "cudnn.allow_tf32": _flag(lambda: torch.backends.cudnn.allow_tf32),
        "cuda.matmul.allow_tf32": _flag(lambda: torch.backends.cuda.matmul.allow_tf32),
        "float32_matmul_precision": _flag(torch.get_float32_matmul_precision),
        "mkldnn": _flag(torch.backends.mkldnn.is_available),
        "cpu_capability": _flag(lambda: torch.backends.cpu.get_cpu_capability()),
    }
    if torch.cuda.is_available():
        lines["cuda"] = torch.version.cuda
        lines["cudnn"] = _flag(torch.backends.cudnn.version)
        lines["gpu"] = torch.cuda.get_device_name()
        lines["driver"] = _flag(lambda: torch.cuda.get_device_properties(0))
    return "\n".join(f"{k}: {v}" for k, v in lines.items())


def distributed():
    """(world size, rank, backend) under torch.distributed, else (1, 0, 'local')."""
    d = torch.distributed
    if d.is_available() and d.is_initialized():
        return d.get_world_size(), d.get_rank(), f"torch.distributed {d.get_backend()}"
    return 1, 0, "local"


def autocast():
    """'off', or the device type and dtype autocast is on for ('cpu torch.bfloat16')."""
    for device in ("cpu", "cuda"):
        try:  # torch >= 2.4: per device type
            on, dtype = torch.is_autocast_enabled(device), lambda: torch.get_autocast_dtype(device)
        except TypeError:  # torch 1.13 .. 2.3
            cpu = device == "cpu"
            on = torch.is_autocast_cpu_enabled() if cpu else torch.is_autocast_enabled()
            dtype = torch.get_autocast_cpu_dtype if cpu else torch.get_autocast_gpu_dtype
        if on:
            return f"{device} {dtype()}"
    return "off"


def describe(model):
    """The backend line: torch, device, dtype, autocast, threads, determinism."""
    p = next(model.parameters())
    return (f"torch {torch.__version__} {p.device.type}, parameters {p.dtype}, autocast {autocast()}, "
            f"{torch.get_num_threads()} threads, deterministic algorithms "
            f"{torch.are_deterministic_algorithms_enabled()}")


def execution(model):
    world, _, communicator = distributed()
    from .deterministic import describe as kernels
    return {"backend": describe(model), "communicator": communicator, "threads": torch.get_num_threads(),
            "world_size": world, "samebits_kernels": kernels(), "environment": environment()}


def ini_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(ini_value(x) for x in v)
    return str(v).replace("\n", " ")


def experiment_text(model, optimizer, tensors, declared):
    """[experiment] what the user declares; [torch] the model's and optimizer's classes; [tensors]
    each parameter's shape and dtype. samebits diff names the fields two runs differ in."""
    lines = ["[experiment]"] + [f"{k} = {ini_value(v)}" for k, v in sorted((declared or {}).items())]
    lines += ["[torch]", f"model = {type(model).__name__}",
              f"optimizer = {type(optimizer).__name__ if optimizer is not None else 'none'}", "[tensors]"]
    lines += [f"{name} = {ini_value(list(shape))} {dtype}" for name, shape, dtype in tensors]
    return "\n".join(lines) + "\n"
