//! The CPU device's allocator: aligned host memory from Rust, exposed through the C ABI table.

use std::alloc::{alloc, dealloc, Layout};
use std::ffi::c_void;

use super::allocator_table::{DeviceAllocator, DeviceAllocatorTable, FLAG_HOST_ADDRESSABLE};

/// Alignment of host "device" blocks: enough for AVX-512 loads and cache lines.
pub const HOST_ALIGN: usize = 256;
/// Alignment of pinned staging buffers on the CPU device: a page.
pub const PAGE_ALIGN: usize = 4096;

fn layout(nbytes: u64, align: usize) -> Option<Layout> {
    let size = usize::try_from(nbytes).ok()?.max(1);
    Layout::from_size_align(size, align).ok()
}

/// Allocate `nbytes` aligned to `align`; null on failure (never aborts).
pub fn aligned_alloc(nbytes: u64, align: usize) -> *mut u8 {
    match layout(nbytes, align) {
        // SAFETY: the layout has a nonzero size.
        Some(l) => unsafe { alloc(l) },
        None => std::ptr::null_mut(),
    }
}

/// Free memory from `aligned_alloc` with the same size and alignment.
///
/// # Safety
/// `ptr` must come from `aligned_alloc(nbytes, align)` and not be freed yet.
pub unsafe fn aligned_free(ptr: *mut u8, nbytes: u64, align: usize) {
    if let (false, Some(l)) = (ptr.is_null(), layout(nbytes, align)) {
        dealloc(ptr, l)
    }
}

unsafe extern "C" fn host_alloc(_ctx: *mut c_void, nbytes: u64, out: *mut u64) -> i32 {
    let p = aligned_alloc(nbytes, HOST_ALIGN);
    if p.is_null() {
        return 2; // same number as cudaErrorMemoryAllocation, for symmetry
    }
    *out = p as u64;
    0
}

unsafe extern "C" fn host_free(_ctx: *mut c_void, ptr: u64, nbytes: u64) {
    aligned_free(ptr as *mut u8, nbytes, HOST_ALIGN)
}

unsafe extern "C" fn host_copy_h2d(_c: *mut c_void, dst: u64, src: *const c_void, n: u64) -> i32 {
    std::ptr::copy(src.cast::<u8>(), dst as *mut u8, n as usize);
    0
}

unsafe extern "C" fn host_copy_d2h(_c: *mut c_void, dst: *mut c_void, src: u64, n: u64) -> i32 {
    std::ptr::copy(src as *const u8, dst.cast::<u8>(), n as usize);
    0
}

unsafe extern "C" fn host_copy_d2d(_c: *mut c_void, dst: u64, src: u64, n: u64) -> i32 {
    // `copy` (memmove) because a block may be copied onto an overlapping part of itself.
    std::ptr::copy(src as *const u8, dst as *mut u8, n as usize);
    0
}

unsafe extern "C" fn host_pinned_alloc(_c: *mut c_void, n: u64, out: *mut *mut c_void) -> i32 {
    let p = aligned_alloc(n, PAGE_ALIGN);
    if p.is_null() {
        return 2;
    }
    *out = p.cast();
    0
}

unsafe extern "C" fn host_pinned_free(_c: *mut c_void, ptr: *mut c_void, n: u64) {
    aligned_free(ptr.cast(), n, PAGE_ALIGN)
}

/// The CPU device's table: host-addressable, synchronous, no async slot.
pub fn host_allocator_table() -> DeviceAllocatorTable {
    let mut t = DeviceAllocatorTable::empty();
    t.flags = FLAG_HOST_ADDRESSABLE;
    t.alloc = Some(host_alloc);
    t.free = Some(host_free);
    t.copy_h2d = Some(host_copy_h2d);
    t.copy_d2h = Some(host_copy_d2h);
    t.copy_d2d = Some(host_copy_d2d);
    t.pinned_alloc = Some(host_pinned_alloc);
    t.pinned_free = Some(host_pinned_free);
    t
}

/// The CPU device's allocator, ready for a pool.
pub fn host_allocator() -> DeviceAllocator {
    match DeviceAllocator::new(host_allocator_table(), None) {
        Ok(a) => a,
        // The table above is complete by construction; this arm is unreachable.
        Err(e) => unreachable!("host allocator table invalid: {e}"),
    }
}
