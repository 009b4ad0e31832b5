"""Build (once, cached) a tiny extension whose functions block the host from C++.

`stream_sync(stream)` calls `cudaStreamSynchronize` and `read_first(tensor)` a blocking
`cudaMemcpy` device->host, directly: neither goes through c10's wrappers, so torch's sync-debug
mode and every Python-level hook miss them. The CUDA runtime's entry points are looked up with
`dlsym` in the runtime torch has already loaded (the driver API as a last resort), so the build
needs only a C++ compiler and torch's headers, no CUDA toolkit.

`load()` builds it with `torch.utils.cpp_extension.load_inline`; if that is impossible here (no
ninja, say) it falls back to the same C code compiled with the system compiler and loaded with
ctypes, which hooks cannot see either. `Ext.kind` says which one is in use.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile

NAME = "syncscope_sync_ext"

LOOKUP = r"""
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*stream_sync_fn)(void*);
typedef int (*memcpy_fn)(void*, const void*, size_t, int);
typedef int (*cu_memcpy_fn)(void*, uint64_t, size_t);

static void* syncscope_symbol(const char* name, int driver) {
  static const char* runtimes[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so", 0};
  static const char* drivers[] = {"libcuda.so.1", "libcuda.so", 0};
  const char** libs = driver ? drivers : runtimes;
  void* p = driver ? 0 : dlsym(RTLD_DEFAULT, name);
  for (int i = 0; !p && libs[i]; ++i) {
    void* h = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
    if (h) p = dlsym(h, name);
  }
  return p;
}

/* 0 on success; -1 when no CUDA entry point was found; else the CUDA error code. */
static int syncscope_stream_sync(void* stream) {
  static stream_sync_fn rt = 0, drv = 0;
  if (!rt && !drv) {
    rt = (stream_sync_fn)syncscope_symbol("cudaStreamSynchronize", 0);
    if (!rt) drv = (stream_sync_fn)syncscope_symbol("cuStreamSynchronize", 1);
  }
  if (rt) return rt(stream);
  if (drv) return drv(stream);
  return -1;
}

static int syncscope_read_first(const void* device_ptr, float* out) {
  static memcpy_fn rt = 0;
  static cu_memcpy_fn drv = 0;
  if (!rt && !drv) {
    rt = (memcpy_fn)syncscope_symbol("cudaMemcpy", 0);
    if (!rt) drv = (cu_memcpy_fn)syncscope_symbol("cuMemcpyDtoH_v2", 1);
  }
  if (rt) return rt(out, device_ptr, sizeof(float), 2 /* cudaMemcpyDeviceToHost */);
  if (drv) return drv(out, (uint64_t)(uintptr_t)device_ptr, sizeof(float));
  return -1;
}
"""

TORCH_SOURCE = LOOKUP + r"""
void stream_sync(int64_t stream) {
  int rc = syncscope_stream_sync(reinterpret_cast<void*>(stream));
  TORCH_CHECK(rc == 0, "syncscope_sync_ext: cudaStreamSynchronize failed (", rc, ")");
}

double read_first(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat && x.numel() > 0, "read_first: a non-empty float32 CUDA tensor");
  float value = 0;
  int rc = syncscope_read_first(x.data_ptr(), &value);
  TORCH_CHECK(rc == 0, "syncscope_sync_ext: cudaMemcpy failed (", rc, ")");
  return value;
}
"""

C_SOURCE = LOOKUP + r"""
int stream_sync(void* stream) { return syncscope_stream_sync(stream); }
int read_first(const void* p, float* out) { return syncscope_read_first(p, out); }
"""


class Ext:
    """The same two functions whichever way the extension was built."""

    def __init__(self, kind: str, module=None, lib=None):
        self.kind = kind
        self._module = module
        self._lib = lib

    def stream_sync(self, stream: int) -> None:
        if self._module is not None:
            self._module.stream_sync(int(stream))
            return
        rc = self._lib.stream_sync(ctypes.c_void_p(int(stream)))
        if rc != 0:
            raise RuntimeError(f"cudaStreamSynchronize failed ({rc})")

    def read_first(self, tensor) -> float:
        if self._module is not None:
            return self._module.read_first(tensor)
        out = ctypes.c_float()
        rc = self._lib.read_first(ctypes.c_void_p(tensor.data_ptr()), ctypes.byref(out))
        if rc != 0:
            raise RuntimeError(f"cudaMemcpy failed ({rc})")
        return out.value


_loaded: Ext | None = None


def _load_inline() -> Ext:
    from torch.utils.cpp_extension import load_inline

    module = load_inline(
        name=NAME,
        cpp_sources=[TORCH_SOURCE],
        functions=["stream_sync", "read_first"],
        with_cuda=False,  # plain C++: the CUDA runtime is reached through dlsym
        extra_cflags=["-O1"],
        extra_ldflags=["-ldl"],
        verbose=False,
    )
    return Ext("load_inline", module=module)


def _load_ctypes() -> Ext:
    digest = hashlib.sha256(C_SOURCE.encode()).hexdigest()[:12]
    directory = os.path.join(tempfile.gettempdir(), f"{NAME}_{digest}")
    os.makedirs(directory, exist_ok=True)
    library = os.path.join(directory, f"{NAME}.so")
    if not os.path.exists(library):
        source = os.path.join(directory, f"{NAME}.c")
        with open(source, "w") as fh:
            fh.write(C_SOURCE)
        partial = library + f".{os.getpid()}"
        compiler = os.environ.get("CC", "cc")
        subprocess.run([compiler, "-O1", "-shared", "-fPIC", source, "-o", partial, "-ldl"], check=True, capture_output=True)
        os.replace(partial, library)
    lib = ctypes.CDLL(library)
    lib.stream_sync.argtypes = [ctypes.c_void_p]
    lib.read_first.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
    return Ext("ctypes", lib=lib)


def load() -> Ext:
    global _loaded
    if _loaded is None:
        import torch  # the CUDA runtime must be loaded before the lookup

        torch.cuda.init()
        if os.environ.get("SYNCSCOPE_SYNC_EXT") == "ctypes":
            _loaded = _load_ctypes()
        else:
            try:
                _loaded = _load_inline()
            except Exception as exc:  # no ninja, no compiler for C++, ...: say so, then fall back
                print(f"sync_ext: load_inline failed ({type(exc).__name__}: {str(exc)[:300]}); using the ctypes build", file=sys.stderr)
                _loaded = _load_ctypes()
    return _loaded
