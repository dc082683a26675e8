"""tf.python.eager.context as gpuctl looks at it: the runtime's handle, None until it starts."""


class _Context:
    _context_handle = None


_ctx = _Context()


def context():
    return _ctx
