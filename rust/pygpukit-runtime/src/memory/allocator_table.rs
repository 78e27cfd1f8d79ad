//! The C ABI table through which a device hands its native allocator and copy functions to the pool.
//!
//! A device backend (the C++ CUDA backend, or the Rust host allocator for the CPU device)
//! fills one `pygpukit_device_allocator_v1` struct and hands its address to Python inside a
//! `PyCapsule` named `"pygpukit.device_allocator_v1"`. The pool copies the struct once and
//! from then on calls the function pointers directly: no Python is involved on the hot path.
//!
//! The equivalent C declaration (all integers little-endian, pointers 64-bit):
//!
//! ```c
//! #define PYGPUKIT_DEVICE_ALLOCATOR_CAPSULE "pygpukit.device_allocator_v1"
//! #define PYGPUKIT_ALLOCATOR_ABI_VERSION 1u
//! #define PYGPUKIT_ALLOCATOR_FLAG_HOST_ADDRESSABLE 1ull  /* device pointers are CPU pointers */
//!
//! typedef struct pygpukit_device_allocator_v1 {
//!     uint32_t abi_version;   /* = PYGPUKIT_ALLOCATOR_ABI_VERSION */
//!     uint32_t struct_size;   /* = sizeof(pygpukit_device_allocator_v1); later versions only append */
//!     uint64_t flags;         /* PYGPUKIT_ALLOCATOR_FLAG_* */
//!     void*    ctx;           /* passed back as the first argument of every call */
//!
//!     /* Required. Return 0 on success; on failure return nonzero (e.g. the cudaError_t). */
//!     int  (*alloc)(void* ctx, uint64_t nbytes, uint64_t* out_dev_ptr);
//!     void (*free)(void* ctx, uint64_t dev_ptr, uint64_t nbytes);
//!     int  (*copy_h2d)(void* ctx, uint64_t dst_dev, const void* src_host, uint64_t nbytes);
//!     int  (*copy_d2h)(void* ctx, void* dst_host, uint64_t src_dev, uint64_t nbytes);
//!     int  (*copy_d2d)(void* ctx, uint64_t dst_dev, uint64_t src_dev, uint64_t nbytes);
//!
//!     /* Optional (NULL = the pool uses page-aligned pageable host memory). */
//!     int  (*pinned_alloc)(void* ctx, uint64_t nbytes, void** out_host_ptr);
//!     void (*pinned_free)(void* ctx, void* host_ptr, uint64_t nbytes);
//!
//!     /* Optional async slot for the transfer engine's copy streams. Either all seven are set
//!      * or the engine ignores them and uses the synchronous copies above (the CPU device
//!      * leaves them NULL). event_query returns 0 = complete, 1 = not ready, other = error. */
//!     int  (*stream_create)(void* ctx, void** out_stream);
//!     void (*stream_destroy)(void* ctx, void* stream);
//!     int  (*copy_h2d_async)(void* ctx, uint64_t dst_dev, const void* src_host, uint64_t nbytes, void* stream);
//!     int  (*copy_d2h_async)(void* ctx, void* dst_host, uint64_t src_dev, uint64_t nbytes, void* stream);
//!     int  (*event_create)(void* ctx, void** out_event);
//!     void (*event_destroy)(void* ctx, void* event);
//!     int  (*event_record)(void* ctx, void* event, void* stream);
//!     int  (*event_query)(void* ctx, void* event);
//!     int  (*event_synchronize)(void* ctx, void* event);
//!
//!     /* Optional: called once when the last pool using this table is dropped. */
//!     void (*release)(void* ctx);
//! } pygpukit_device_allocator_v1;
//! ```
//!
//! Every function must be callable from any thread, concurrently, and must not call into
//! Python (the pool may hold its lock while calling them, with the GIL released).

use std::any::Any;
use std::ffi::c_void;

/// The ABI version this runtime understands.
pub const ALLOCATOR_ABI_VERSION: u32 = 1;
/// The name the capsule carrying a table must have.
pub const ALLOCATOR_CAPSULE_NAME: &str = "pygpukit.device_allocator_v1";
/// Flag: device pointers are host pointers (the CPU device), so blocks can export buffers.
pub const FLAG_HOST_ADDRESSABLE: u64 = 1;

type Ctx = *mut c_void;

/// The `#[repr(C)]` mirror of `pygpukit_device_allocator_v1` (see the module docs).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DeviceAllocatorTable {
    pub abi_version: u32,
    pub struct_size: u32,
    pub flags: u64,
    pub ctx: Ctx,
    pub alloc: Option<unsafe extern "C" fn(Ctx, u64, *mut u64) -> i32>,
    pub free: Option<unsafe extern "C" fn(Ctx, u64, u64)>,
    pub copy_h2d: Option<unsafe extern "C" fn(Ctx, u64, *const c_void, u64) -> i32>,
    pub copy_d2h: Option<unsafe extern "C" fn(Ctx, *mut c_void, u64, u64) -> i32>,
    pub copy_d2d: Option<unsafe extern "C" fn(Ctx, u64, u64, u64) -> i32>,
    pub pinned_alloc: Option<unsafe extern "C" fn(Ctx, u64, *mut *mut c_void) -> i32>,
    pub pinned_free: Option<unsafe extern "C" fn(Ctx, *mut c_void, u64)>,
    pub stream_create: Option<unsafe extern "C" fn(Ctx, *mut *mut c_void) -> i32>,
    pub stream_destroy: Option<unsafe extern "C" fn(Ctx, *mut c_void)>,
    pub copy_h2d_async: Option<unsafe extern "C" fn(Ctx, u64, *const c_void, u64, *mut c_void) -> i32>,
    pub copy_d2h_async: Option<unsafe extern "C" fn(Ctx, *mut c_void, u64, u64, *mut c_void) -> i32>,
    pub event_create: Option<unsafe extern "C" fn(Ctx, *mut *mut c_void) -> i32>,
    pub event_destroy: Option<unsafe extern "C" fn(Ctx, *mut c_void)>,
    pub event_record: Option<unsafe extern "C" fn(Ctx, *mut c_void, *mut c_void) -> i32>,
    pub event_query: Option<unsafe extern "C" fn(Ctx, *mut c_void) -> i32>,
    pub event_synchronize: Option<unsafe extern "C" fn(Ctx, *mut c_void) -> i32>,
    pub release: Option<unsafe extern "C" fn(Ctx)>,
}

impl DeviceAllocatorTable {
    /// A table with only the header filled in; backends then set the function pointers.
    pub fn empty() -> Self {
        DeviceAllocatorTable {
            abi_version: ALLOCATOR_ABI_VERSION,
            struct_size: std::mem::size_of::<Self>() as u32,
            flags: 0,
            ctx: std::ptr::null_mut(),
            alloc: None,
            free: None,
            copy_h2d: None,
            copy_d2h: None,
            copy_d2d: None,
            pinned_alloc: None,
            pinned_free: None,
            stream_create: None,
            stream_destroy: None,
            copy_h2d_async: None,
            copy_d2h_async: None,
            event_create: None,
            event_destroy: None,
            event_record: None,
            event_query: None,
            event_synchronize: None,
            release: None,
        }
    }
}

/// The async functions of a table, present only when the whole slot is filled.
#[derive(Clone, Copy)]
pub struct AsyncOps {
    pub stream_create: unsafe extern "C" fn(Ctx, *mut *mut c_void) -> i32,
    pub stream_destroy: unsafe extern "C" fn(Ctx, *mut c_void),
    pub copy_h2d_async: unsafe extern "C" fn(Ctx, u64, *const c_void, u64, *mut c_void) -> i32,
    pub copy_d2h_async: unsafe extern "C" fn(Ctx, *mut c_void, u64, u64, *mut c_void) -> i32,
    pub event_create: unsafe extern "C" fn(Ctx, *mut *mut c_void) -> i32,
    pub event_destroy: unsafe extern "C" fn(Ctx, *mut c_void),
    pub event_record: unsafe extern "C" fn(Ctx, *mut c_void, *mut c_void) -> i32,
    pub event_query: unsafe extern "C" fn(Ctx, *mut c_void) -> i32,
    pub event_synchronize: unsafe extern "C" fn(Ctx, *mut c_void) -> i32,
}

/// A validated table plus whatever keeps its `ctx` alive; the safe face of the C ABI.
pub struct DeviceAllocator {
    table: DeviceAllocatorTable,
    // Held only so the owner of `ctx` (e.g. the Python capsule) outlives the table.
    _keepalive: Option<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for DeviceAllocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceAllocator").field("table", &self.table).finish()
    }
}

// The table's contract requires thread-safe functions; `ctx` is opaque to us.
unsafe impl Send for DeviceAllocator {}
unsafe impl Sync for DeviceAllocator {}

impl DeviceAllocator {
    /// Validate `table` and wrap it. `keepalive` is dropped after `release` is called.
    pub fn new(
        table: DeviceAllocatorTable,
        keepalive: Option<Box<dyn Any + Send + Sync>>,
    ) -> Result<Self, String> {
        if table.abi_version != ALLOCATOR_ABI_VERSION {
            return Err(format!(
                "device allocator ABI version {} is not supported (expected {})",
                table.abi_version, ALLOCATOR_ABI_VERSION
            ));
        }
        if (table.struct_size as usize) < std::mem::size_of::<DeviceAllocatorTable>() {
            return Err(format!(
                "device allocator table is {} bytes, expected at least {}",
                table.struct_size,
                std::mem::size_of::<DeviceAllocatorTable>()
            ));
        }
        let required = [
            ("alloc", table.alloc.is_some()),
            ("free", table.free.is_some()),
            ("copy_h2d", table.copy_h2d.is_some()),
            ("copy_d2h", table.copy_d2h.is_some()),
            ("copy_d2d", table.copy_d2d.is_some()),
        ];
        if let Some((name, _)) = required.iter().find(|(_, present)| !present) {
            return Err(format!("device allocator table has no `{name}` function"));
        }
        if table.pinned_alloc.is_some() != table.pinned_free.is_some() {
            return Err("pinned_alloc and pinned_free must be both set or both null".into());
        }
        Ok(DeviceAllocator { table, _keepalive: keepalive })
    }

    /// Whether device pointers can be dereferenced by the CPU.
    pub fn is_host_addressable(&self) -> bool {
        self.table.flags & FLAG_HOST_ADDRESSABLE != 0
    }

    /// A copy of the raw table (for handing it on, e.g. into another capsule).
    pub fn table(&self) -> DeviceAllocatorTable {
        self.table
    }

    /// Ask the device for `nbytes`; `None` when it has no memory (or any other failure).
    pub fn alloc(&self, nbytes: u64) -> Option<u64> {
        let f = self.table.alloc?;
        let mut out = 0u64;
        // SAFETY: validated table; the backend's contract covers concurrency.
        let rc = unsafe { f(self.table.ctx, nbytes, &mut out) };
        (rc == 0 && out != 0).then_some(out)
    }

    /// Return memory obtained from `alloc`.
    pub fn free(&self, ptr: u64, nbytes: u64) {
        if let Some(f) = self.table.free {
            // SAFETY: `ptr` came from this table's `alloc` with this size.
            unsafe { f(self.table.ctx, ptr, nbytes) }
        }
    }

    pub fn copy_h2d(&self, dst: u64, src: &[u8]) -> Result<(), String> {
        let f = self.table.copy_h2d.ok_or("no copy_h2d")?;
        // SAFETY: the caller checked `dst..dst+len` lies inside one live device block.
        let rc = unsafe { f(self.table.ctx, dst, src.as_ptr().cast(), src.len() as u64) };
        check(rc, "host-to-device copy")
    }

    pub fn copy_d2h(&self, dst: &mut [u8], src: u64) -> Result<(), String> {
        let f = self.table.copy_d2h.ok_or("no copy_d2h")?;
        // SAFETY: as for `copy_h2d`.
        let rc = unsafe { f(self.table.ctx, dst.as_mut_ptr().cast(), src, dst.len() as u64) };
        check(rc, "device-to-host copy")
    }

    pub fn copy_d2d(&self, dst: u64, src: u64, nbytes: u64) -> Result<(), String> {
        let f = self.table.copy_d2d.ok_or("no copy_d2d")?;
        // SAFETY: as for `copy_h2d`, for both ranges.
        let rc = unsafe { f(self.table.ctx, dst, src, nbytes) };
        check(rc, "device-to-device copy")
    }

    /// Whether the device offers pinned (page-locked) host memory.
    pub fn has_pinned(&self) -> bool {
        self.table.pinned_alloc.is_some()
    }

    /// Pinned host memory from the device; `None` if it has none or the call failed.
    pub fn pinned_alloc(&self, nbytes: u64) -> Option<*mut u8> {
        let f = self.table.pinned_alloc?;
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: validated table.
        let rc = unsafe { f(self.table.ctx, nbytes, &mut out) };
        (rc == 0 && !out.is_null()).then_some(out.cast())
    }

    pub fn pinned_free(&self, ptr: *mut u8, nbytes: u64) {
        if let Some(f) = self.table.pinned_free {
            // SAFETY: `ptr` came from `pinned_alloc` with this size.
            unsafe { f(self.table.ctx, ptr.cast(), nbytes) }
        }
    }

    /// The opaque context, for the async functions.
    pub fn ctx(&self) -> *mut c_void {
        self.table.ctx
    }

    /// The async slot, if the backend filled all of it.
    pub fn async_ops(&self) -> Option<AsyncOps> {
        let t = &self.table;
        Some(AsyncOps {
            stream_create: t.stream_create?,
            stream_destroy: t.stream_destroy?,
            copy_h2d_async: t.copy_h2d_async?,
            copy_d2h_async: t.copy_d2h_async?,
            event_create: t.event_create?,
            event_destroy: t.event_destroy?,
            event_record: t.event_record?,
            event_query: t.event_query?,
            event_synchronize: t.event_synchronize?,
        })
    }
}

impl Drop for DeviceAllocator {
    fn drop(&mut self) {
        if let Some(f) = self.table.release {
            // SAFETY: called exactly once, after every other use of the table.
            unsafe { f(self.table.ctx) }
        }
    }
}

fn check(rc: i32, what: &str) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed with device error {rc}"))
    }
}
