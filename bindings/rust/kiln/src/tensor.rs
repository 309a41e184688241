//! Tensor views: device memory described for a plan, with the C descriptor's fields.
use crate::dtype::DType;
use crate::error::{Error, ErrorClass, Result};
use kiln_sys as sys;
use std::marker::PhantomData;
use std::ptr::null;

/// A tensor in device memory (or, with no memory, a shape and dtype to plan and compile for):
/// a CUdeviceptr, a dtype, extents and optional strides in elements (none: row-major).
/// It borrows its shape, its strides and, made by `Buffer::view`, the buffer.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    data: u64,
    dtype: DType,
    shape: &'a [i64],
    strides: Option<&'a [i64]>,
    _memory: PhantomData<&'a ()>,
}

impl<'a> TensorView<'a> {
    /// A view without memory: what plans check shapes on and compile for, never run on.
    pub fn planning(dtype: DType, shape: &'a [i64]) -> TensorView<'a> {
        TensorView { data: 0, dtype, shape, strides: None, _memory: PhantomData }
    }

    /// A strided view without memory (strides in elements, one per dim).
    pub fn planning_strided(dtype: DType, shape: &'a [i64], strides: &'a [i64]) -> TensorView<'a> {
        TensorView { data: 0, dtype, shape, strides: Some(strides), _memory: PhantomData }
    }

    /// A view of memory the caller owns (a CUdeviceptr from another library).
    ///
    /// # Safety
    /// `data` is device memory of the engine's device holding the view's elements for as long
    /// as the view is used; kiln writes outputs there.
    pub unsafe fn from_raw(data: u64, dtype: DType, shape: &'a [i64]) -> TensorView<'a> {
        TensorView { data, dtype, shape, strides: None, _memory: PhantomData }
    }

    /// The view with `strides` (in elements, one per dim).
    ///
    /// # Safety
    /// Every element the strides reach lies in the view's memory (`Buffer::strided_view` checks
    /// it); a view without memory (planning) is always safe.
    pub unsafe fn with_strides(mut self, strides: &'a [i64]) -> TensorView<'a> {
        self.strides = Some(strides);
        self
    }

    pub fn data(&self) -> u64 {
        self.data
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn shape(&self) -> &'a [i64] {
        self.shape
    }
    pub fn strides(&self) -> Option<&'a [i64]> {
        self.strides
    }
    /// Number of elements (0 with a negative extent: kiln refuses the view).
    pub fn numel(&self) -> i64 {
        self.shape.iter().map(|&e| e.max(0)).product()
    }

    /// The C descriptor; it points into the view's shape and strides.
    pub fn as_raw(&self) -> sys::kiln_tensor {
        sys::kiln_tensor {
            data: self.data,
            byte_offset: 0,
            dtype: self.dtype.code(),
            rank: self.shape.len() as i32,
            shape: self.shape.as_ptr(),
            strides: self.strides.map_or(null(), |s| s.as_ptr()),
        }
    }

    /// Bytes from the first element to past the last a view reaches (0 with no elements);
    /// Shape error for a negative extent or stride, or strides of another rank.
    pub(crate) fn reach_bytes(dtype: DType, shape: &[i64], strides: Option<&[i64]>) -> Result<u128> {
        let shape_err = |why: String| Error::new(ErrorClass::Shape, why);
        if let Some(&e) = shape.iter().find(|&&e| e < 0) {
            return Err(shape_err(format!("shape {:?} has a negative extent {}", shape, e)));
        }
        if shape.iter().any(|&e| e == 0) {
            return Ok(0);
        }
        let last: u128 = match strides {
            None => shape.iter().map(|&e| e as u128).product::<u128>() - 1,
            Some(s) => {
                if s.len() != shape.len() {
                    return Err(shape_err(format!(
                        "strides {:?} are not one per dim of shape {:?}",
                        s, shape
                    )));
                }
                if let Some(&bad) = s.iter().find(|&&x| x < 0) {
                    return Err(shape_err(format!("strides {:?} have a negative stride {}", s, bad)));
                }
                shape.iter().zip(s).map(|(&e, &x)| (e as u128 - 1) * x as u128).sum()
            }
        };
        Ok((last + 1) * dtype.size() as u128)
    }
}

/// The descriptors of `views`, on the stack for up to 8 (a run's usual count), handed to `f`.
pub(crate) fn with_raw<R>(views: &[TensorView<'_>], f: impl FnOnce(&[sys::kiln_tensor]) -> R) -> R {
    const EMPTY: sys::kiln_tensor =
        sys::kiln_tensor { data: 0, byte_offset: 0, dtype: 0, rank: 0, shape: null(), strides: null() };
    if views.len() <= 8 {
        let mut a = [EMPTY; 8];
        for (slot, v) in a.iter_mut().zip(views) {
            *slot = v.as_raw();
        }
        f(&a[..views.len()])
    } else {
        let v: Vec<_> = views.iter().map(|v| v.as_raw()).collect();
        f(&v)
    }
}
