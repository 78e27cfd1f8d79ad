"""The elementwise ops the triton provider serves (no Triton import: listed even without it)."""

UNARY_OPS = ("abs", "negative", "positive", "square", "relu", "sqrt", "rsqrt", "exp", "log",
             "log2", "sin", "cos", "tanh", "sigmoid", "silu", "gelu")  # fmt: skip
BINARY_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
#: ops this plugin adds to the dispatcher (pygpukit.backend.register_op): name -> call
PLUGIN_OPS = {"swiglu": "(gate, up, out)"}
