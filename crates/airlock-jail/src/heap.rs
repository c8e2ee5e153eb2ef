//! Handing a long-lived, mostly idle process's free heap back to the kernel.

/// Gives the heap's free memory back to the kernel. glibc keeps what a program freed for its
/// next allocations; a box's host and init are idle most of their lives, and what setting up
/// the box freed would otherwise stay resident in each of them.
pub fn trim() {
    // SAFETY: malloc_trim only releases memory the allocator holds free.
    unsafe { libc::malloc_trim(0) };
}
