"""The tag columns every PyTorch probe here writes first: gpu,driver,cuda,nccl of GPU 0
(PyTorch's own CUDA and NCCL, the driver from nvidia-smi, 'unknown' where it does not
answer)."""
import subprocess

import torch


def gpu_tag():
    name = torch.cuda.get_device_name(0)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader",
                             "-i", "0"], capture_output=True, text=True, check=False).stdout.strip()
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    return f"{name},{driver or 'unknown'},{torch.version.cuda},{nccl}"
