"""Entry point `broken`: importing it raises, as a plugin with a missing dependency would."""

raise ImportError("pygpukit-broken: deliberately broken plugin (missing libfoo.so)")
