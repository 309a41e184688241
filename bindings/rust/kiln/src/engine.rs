//! Engines (a device, or an offline arch, with a kernel cache) and the device memory they
//! allocate.
use crate::dtype::DType;
use crate::error::{c_string, check, Error, ErrorClass, Result};
use crate::graph::Graph;
use crate::tensor::TensorView;
use kiln_sys as sys;
use std::ffi::{CStr, CString};
use std::os::raw::c_void;
use std::path::Path;
use std::ptr::{null, null_mut, NonNull};

/// Where an engine keeps compiled kernels.
#[derive(Clone, Copy, Debug)]
pub enum Cache<'a> {
    /// `$KILN_CACHE_DIR`, else `~/.cache/kiln`.
    Default,
    /// No disk cache: kernels stay in the engine's memory.
    Memory,
    /// This directory (made if missing).
    Dir(&'a Path),
}

impl Cache<'_> {
    /// The C argument: NULL, "" or the path. Keep the CString alive across the call.
    pub(crate) fn c_arg(&self) -> Result<Option<CString>> {
        Ok(match self {
            Cache::Default => None,
            Cache::Memory => Some(CString::default()),
            Cache::Dir(p) => {
                let s = p.to_str().ok_or_else(|| {
                    Error::new(ErrorClass::Cache, format!("cache directory {:?} is not UTF-8", p))
                })?;
                Some(c_string(s, "cache directory")?)
            }
        })
    }
}

pub(crate) fn ptr_of(s: &Option<CString>) -> *const std::os::raw::c_char {
    s.as_ref().map_or(null(), |c| c.as_ptr())
}

/// What an engine's kernel cache counted.
pub type CacheStats = sys::kiln_cache_stats;

/// One device (or an offline arch) and its kernel cache.
///
/// Send, not Sync: kiln::Engine is used from one thread at a time (the C++ API's rule); it may
/// move between threads, since each call makes its CUDA context current for itself.
pub struct Engine {
    raw: NonNull<sys::kiln_engine>,
}

// SAFETY: see the type's comment; every method that reaches the engine takes &mut self or reads
// fields fixed at creation.
unsafe impl Send for Engine {}

impl Engine {
    /// An engine on CUDA device `device` (Cuda error without a GPU).
    pub fn new(device: i32, cache: Cache<'_>) -> Result<Engine> {
        let dir = cache.c_arg()?;
        let mut raw = null_mut();
        // SAFETY: valid pointers; `dir` outlives the call.
        check(unsafe { sys::kiln_engine_create(device, ptr_of(&dir), &mut raw) })?;
        Ok(Engine { raw: NonNull::new(raw).expect("kiln_engine_create gave NULL") })
    }

    /// An engine that compiles for `arch` ("sm_90a") without a GPU: its plans compile, never run.
    pub fn offline(arch: &str, cache: Cache<'_>) -> Result<Engine> {
        let arch = c_string(arch, "arch")?;
        let dir = cache.c_arg()?;
        let mut raw = null_mut();
        // SAFETY: valid pointers; the strings outlive the call.
        check(unsafe { sys::kiln_engine_create_offline(arch.as_ptr(), ptr_of(&dir), &mut raw) })?;
        Ok(Engine { raw: NonNull::new(raw).expect("kiln_engine_create_offline gave NULL") })
    }

    /// The engine's handle, for calls of kiln-sys.
    pub fn as_raw(&mut self) -> *mut sys::kiln_engine {
        self.raw.as_ptr()
    }

    pub fn arch(&self) -> String {
        let mut out = null();
        // SAFETY: the engine is live; the string lives as long as it and is copied at once.
        check(unsafe { sys::kiln_engine_arch(self.raw.as_ptr(), &mut out) })
            .expect("kiln_engine_arch fails only on NULLs");
        unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned()
    }

    /// Blocks until the engine's stream is idle.
    pub fn synchronize(&mut self) -> Result<()> {
        check(unsafe { sys::kiln_engine_synchronize(self.raw.as_ptr()) })
    }

    /// Launches go to `stream` from now on (NULL: the legacy default stream).
    ///
    /// # Safety
    /// `stream` is a CUstream of the engine's device that outlives its use by the engine.
    pub unsafe fn set_stream(&mut self, stream: *mut c_void) -> Result<()> {
        check(sys::kiln_engine_set_stream(self.raw.as_ptr(), stream))
    }

    /// Launches go to the engine's own stream again.
    pub fn use_own_stream(&mut self) -> Result<()> {
        check(unsafe { sys::kiln_engine_use_own_stream(self.raw.as_ptr()) })
    }

    pub fn cache_stats(&self) -> CacheStats {
        let mut s = CacheStats::default();
        check(unsafe { sys::kiln_engine_cache_stats(self.raw.as_ptr(), &mut s) })
            .expect("kiln_engine_cache_stats fails only on NULLs");
        s
    }

    /// `bytes` of uninitialized device memory (Cuda error on an offline engine).
    pub fn alloc(&mut self, bytes: usize) -> Result<Buffer> {
        let mut raw = null_mut();
        check(unsafe { sys::kiln_buffer_create(self.raw.as_ptr(), bytes, &mut raw) })?;
        let raw = NonNull::new(raw).expect("kiln_buffer_create gave NULL");
        let mut data = 0;
        check(unsafe { sys::kiln_buffer_data(raw.as_ptr(), &mut data, null_mut()) })?;
        Ok(Buffer { raw, data, bytes })
    }

    /// Device memory holding a copy of `values`.
    pub fn upload<T: Plain>(&mut self, values: &[T]) -> Result<Buffer> {
        let mut b = self.alloc(std::mem::size_of_val(values))?;
        b.write(values)?;
        Ok(b)
    }

    /// Times every candidate of each kernel of `graph`'s plan on the GPU and saves the winners
    /// in the cache directory (`kiln tune`); the number of kernels tuned. `budget_s` > 0: no
    /// kernel starts after that many seconds.
    pub fn tune(&mut self, graph: &Graph, budget_s: f64) -> Result<usize> {
        let mut n = 0;
        check(unsafe { sys::kiln_tune(self.raw.as_ptr(), graph.as_raw(), budget_s, &mut n) })?;
        Ok(n)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: the handle is live and dropped once; destroying never fails on a live one.
        unsafe { sys::kiln_engine_destroy(self.raw.as_ptr()) };
    }
}

/// Element types a Buffer copies as raw bytes: every bit pattern is a valid value. f16 and bf16
/// travel as u16 (`crate::f32_to_f16`, `crate::f32_to_bf16`).
///
/// # Safety
/// Implemented only for plain numbers without padding.
pub unsafe trait Plain: Copy + 'static {}
unsafe impl Plain for u8 {}
unsafe impl Plain for u16 {}
unsafe impl Plain for i32 {}
unsafe impl Plain for u32 {}
unsafe impl Plain for i64 {}
unsafe impl Plain for u64 {}
unsafe impl Plain for f32 {}
unsafe impl Plain for f64 {}

/// Device memory kiln allocated. It keeps its device's context alive: it may outlive its
/// engine. Send and Sync: copies make the context current for themselves, and a write needs
/// &mut.
pub struct Buffer {
    raw: NonNull<sys::kiln_buffer>,
    data: u64,
    bytes: usize,
}

// SAFETY: see the type's comment.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// The CUdeviceptr.
    pub fn device_ptr(&self) -> u64 {
        self.data
    }

    /// Copies `values` (the buffer's size exactly) in, after the device's pending work.
    pub fn write<T: Plain>(&mut self, values: &[T]) -> Result<()> {
        let n = std::mem::size_of_val(values);
        check(unsafe { sys::kiln_buffer_write(self.raw.as_ptr(), values.as_ptr().cast(), n) })
    }

    /// Copies the buffer out into `values` (its size exactly), after the device's pending work.
    pub fn read<T: Plain>(&self, values: &mut [T]) -> Result<()> {
        let n = std::mem::size_of_val(values);
        check(unsafe { sys::kiln_buffer_read(self.raw.as_ptr(), values.as_mut_ptr().cast(), n) })
    }

    /// The buffer's elements as a Vec of `T`.
    pub fn to_vec<T: Plain + Default>(&self) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>();
        if self.bytes % size != 0 {
            return Err(Error::new(
                ErrorClass::Argument,
                format!("a buffer of {} bytes is not a whole number of {}-byte elements", self.bytes, size),
            ));
        }
        let mut v = vec![T::default(); self.bytes / size];
        self.read(&mut v)?;
        Ok(v)
    }

    /// A row-major view of the buffer's start as a `dtype` tensor of `shape` (Shape error if it
    /// needs more bytes than the buffer has).
    pub fn view<'a>(&'a self, dtype: DType, shape: &'a [i64]) -> Result<TensorView<'a>> {
        let need = TensorView::reach_bytes(dtype, shape, None)?;
        if need > self.bytes as u128 {
            return Err(Error::new(
                ErrorClass::Shape,
                format!(
                    "a {} view of shape {:?} needs {} bytes, the buffer has {}",
                    dtype.name(),
                    shape,
                    need,
                    self.bytes
                ),
            ));
        }
        // SAFETY: checked against the buffer's size, and borrows it.
        Ok(unsafe { TensorView::from_raw(self.data, dtype, shape) })
    }

    /// A strided view (strides in elements, one per dim) over the buffer's memory, checked to
    /// stay within it.
    pub fn strided_view<'a>(
        &'a self,
        dtype: DType,
        shape: &'a [i64],
        strides: &'a [i64],
    ) -> Result<TensorView<'a>> {
        let need = TensorView::reach_bytes(dtype, shape, Some(strides))?;
        if need > self.bytes as u128 {
            return Err(Error::new(
                ErrorClass::Shape,
                format!(
                    "a {} view of shape {:?}, strides {:?} reaches {} bytes, the buffer has {}",
                    dtype.name(),
                    shape,
                    strides,
                    need,
                    self.bytes
                ),
            ));
        }
        // SAFETY: checked to stay within the buffer, and borrows it.
        Ok(unsafe { TensorView::from_raw(self.data, dtype, shape).with_strides(strides) })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        unsafe { sys::kiln_buffer_destroy(self.raw.as_ptr()) };
    }
}
