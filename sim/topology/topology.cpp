// implemented by the owning change
