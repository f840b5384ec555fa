// kernels placeholder
