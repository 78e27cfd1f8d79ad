"""pygpukit.asr: speech recognition on pygpukit ops (Whisper, in pygpukit.asr.whisper)."""
