"""What the PyTorch peers record of the machine beside their timings (the `driver` column of
their CSV rows)."""


def driver_version():
    """The NVIDIA kernel module's version, from /proc/driver/nvidia/version; "unknown" where
    it cannot be read."""
    try:
        words = open("/proc/driver/nvidia/version").read().split()
        after = words[words.index("Module") + 1:]
        return next(w for w in after if w[0].isdigit() and "." in w)
    except (OSError, ValueError, StopIteration):
        return "unknown"
