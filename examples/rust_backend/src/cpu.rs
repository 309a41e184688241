//! The CPU backend: every op in f64 on f32 storage, the reference kiln's results are checked
//! against.
use crate::backend::Backend;
use crate::ops::EPS;
use kiln::{DType, Error, ErrorClass, Result};

#[derive(Clone, Debug)]
pub struct CpuTensor {
    pub data: Vec<f32>,
    pub rows: usize,
    pub cols: usize,
}

/// `dtype`: what kiln stores intermediates in (the MLP's hidden activations are rounded to it).
pub struct CpuBackend {
    pub dtype: DType,
}

/// `x` rounded to `t` and back.
pub fn round_to(t: DType, x: f32) -> f32 {
    match t {
        DType::F16 => kiln::f16_to_f32(kiln::f32_to_f16(x)),
        DType::BF16 => kiln::bf16_to_f32(kiln::f32_to_bf16(x)),
        _ => x,
    }
}

pub fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn map(x: &CpuTensor, f: impl Fn(f64) -> f64) -> Result<CpuTensor> {
    Ok(CpuTensor { data: x.data.iter().map(|&v| f(v as f64) as f32).collect(), ..*x })
}

fn zip(a: &CpuTensor, b: &CpuTensor, f: impl Fn(f64, f64) -> f64) -> Result<CpuTensor> {
    if (a.rows, a.cols) != (b.rows, b.cols) {
        return Err(Error::new(
            ErrorClass::Shape,
            format!("cpu: [{}, {}] and [{}, {}]", a.rows, a.cols, b.rows, b.cols),
        ));
    }
    Ok(CpuTensor {
        data: a.data.iter().zip(&b.data).map(|(&x, &y)| f(x as f64, y as f64) as f32).collect(),
        ..*a
    })
}

// Each row of x through `f` (the row in f64, the result written into the second slice).
fn rows(x: &CpuTensor, f: impl Fn(&[f64], &mut [f64])) -> Result<CpuTensor> {
    let mut data = Vec::with_capacity(x.data.len());
    let mut out = vec![0.0; x.cols];
    for r in x.data.chunks(x.cols) {
        let row: Vec<f64> = r.iter().map(|&v| v as f64).collect();
        f(&row, &mut out);
        data.extend(out.iter().map(|&v| v as f32));
    }
    Ok(CpuTensor { data, ..*x })
}

/// a [m, k] @ bᵀ (b [n, k]), in f64.
pub fn matmul_t(a: &CpuTensor, b: &CpuTensor) -> Vec<f64> {
    let mut out = vec![0.0; a.rows * b.rows];
    for i in 0..a.rows {
        for j in 0..b.rows {
            let (x, w) = (&a.data[i * a.cols..][..a.cols], &b.data[j * b.cols..][..b.cols]);
            out[i * b.rows + j] = x.iter().zip(w).map(|(&p, &q)| p as f64 * q as f64).sum();
        }
    }
    out
}

impl Backend for CpuBackend {
    type Storage = CpuTensor;

    fn from_vec(&self, data: &[f32], rows: usize, cols: usize) -> Result<CpuTensor> {
        Ok(CpuTensor { data: data.to_vec(), rows, cols })
    }
    fn to_vec(&self, t: &CpuTensor) -> Result<Vec<f32>> {
        Ok(t.data.clone())
    }
    fn add(&self, a: &CpuTensor, b: &CpuTensor) -> Result<CpuTensor> {
        zip(a, b, |x, y| x + y)
    }
    fn sub(&self, a: &CpuTensor, b: &CpuTensor) -> Result<CpuTensor> {
        zip(a, b, |x, y| x - y)
    }
    fn mul(&self, a: &CpuTensor, b: &CpuTensor) -> Result<CpuTensor> {
        zip(a, b, |x, y| x * y)
    }
    fn div(&self, a: &CpuTensor, b: &CpuTensor) -> Result<CpuTensor> {
        zip(a, b, |x, y| x / y)
    }
    fn relu(&self, x: &CpuTensor) -> Result<CpuTensor> {
        map(x, |v| v.max(0.0))
    }
    fn relu_backward(&self, x: &CpuTensor, grad: &CpuTensor) -> Result<CpuTensor> {
        zip(x, grad, |v, g| if v > 0.0 { g } else { 0.0 })
    }
    fn sigmoid(&self, x: &CpuTensor) -> Result<CpuTensor> {
        map(x, |v| 1.0 / (1.0 + (-v).exp()))
    }
    fn gelu(&self, x: &CpuTensor) -> Result<CpuTensor> {
        map(x, gelu_tanh)
    }
    fn exp(&self, x: &CpuTensor) -> Result<CpuTensor> {
        map(x, f64::exp)
    }
    fn log(&self, x: &CpuTensor) -> Result<CpuTensor> {
        map(x, f64::ln)
    }
    fn powf(&self, x: &CpuTensor, p: f32) -> Result<CpuTensor> {
        map(x, |v| v.powf(p as f64))
    }
    fn softmax(&self, x: &CpuTensor) -> Result<CpuTensor> {
        rows(x, |r, out| {
            let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = r.iter().map(|v| (v - m).exp()).sum();
            for (o, v) in out.iter_mut().zip(r) {
                *o = (v - m).exp() / s;
            }
        })
    }
    fn layernorm(&self, x: &CpuTensor, w: &CpuTensor, b: &CpuTensor) -> Result<CpuTensor> {
        rows(x, |r, out| {
            let n = r.len() as f64;
            let mean = r.iter().sum::<f64>() / n;
            let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            for (c, o) in out.iter_mut().enumerate() {
                *o = (r[c] - mean) / (var + EPS).sqrt() * w.data[c] as f64 + b.data[c] as f64;
            }
        })
    }
    fn sum(&self, x: &CpuTensor) -> Result<CpuTensor> {
        let s: f64 = x.data.iter().map(|&v| v as f64).sum();
        Ok(CpuTensor { data: vec![s as f32], rows: 1, cols: 1 })
    }
    fn fill(&self, like: &CpuTensor, value: f32) -> Result<CpuTensor> {
        map(like, |_| value as f64)
    }
    fn copy(&self, x: &CpuTensor) -> Result<CpuTensor> {
        Ok(x.clone())
    }
    fn scalar_mul(&self, x: &CpuTensor, s: f32) -> Result<CpuTensor> {
        map(x, |v| v * s as f64)
    }
    fn scalar_add(&self, x: &CpuTensor, s: f32) -> Result<CpuTensor> {
        map(x, |v| v + s as f64)
    }
    fn mlp_forward(
        &self,
        x: &CpuTensor,
        w1: &CpuTensor,
        b1: &CpuTensor,
        w2: &CpuTensor,
    ) -> Result<CpuTensor> {
        let h = matmul_t(x, w1);
        let a: Vec<f32> = h
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                round_to(
                    self.dtype,
                    gelu_tanh(round_to(self.dtype, (v + b1.data[i % w1.rows] as f64) as f32) as f64) as f32,
                )
            })
            .collect();
        let a = CpuTensor { data: a, rows: x.rows, cols: w1.rows };
        let y = matmul_t(&a, w2);
        Ok(CpuTensor { data: y.iter().map(|&v| v as f32).collect(), rows: x.rows, cols: w2.rows })
    }
}
