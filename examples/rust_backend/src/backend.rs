//! The backend shape of seed 003 (RustyGradients): a trait of tensor ops over a storage type,
//! implemented on the CPU (cpu.rs, the reference) and by kiln plans (kiln_backend.rs).
use crate::ops::Op;
use kiln::Result;

pub trait Backend {
    type Storage;

    /// A [rows, cols] tensor of `data` (rows * cols values; w and b of layernorm: [1, cols]).
    fn from_vec(&self, data: &[f32], rows: usize, cols: usize) -> Result<Self::Storage>;
    fn to_vec(&self, t: &Self::Storage) -> Result<Vec<f32>>;

    fn add(&self, a: &Self::Storage, b: &Self::Storage) -> Result<Self::Storage>;
    fn sub(&self, a: &Self::Storage, b: &Self::Storage) -> Result<Self::Storage>;
    fn mul(&self, a: &Self::Storage, b: &Self::Storage) -> Result<Self::Storage>;
    fn div(&self, a: &Self::Storage, b: &Self::Storage) -> Result<Self::Storage>;
    fn relu(&self, x: &Self::Storage) -> Result<Self::Storage>;
    /// grad where x > 0, else 0.
    fn relu_backward(&self, x: &Self::Storage, grad: &Self::Storage) -> Result<Self::Storage>;
    fn sigmoid(&self, x: &Self::Storage) -> Result<Self::Storage>;
    /// The tanh approximation, as the seed's kernel.
    fn gelu(&self, x: &Self::Storage) -> Result<Self::Storage>;
    fn exp(&self, x: &Self::Storage) -> Result<Self::Storage>;
    fn log(&self, x: &Self::Storage) -> Result<Self::Storage>;
    fn powf(&self, x: &Self::Storage, p: f32) -> Result<Self::Storage>;
    /// Along each row.
    fn softmax(&self, x: &Self::Storage) -> Result<Self::Storage>;
    /// Along each row, with weight and bias of one row's length.
    fn layernorm(&self, x: &Self::Storage, w: &Self::Storage, b: &Self::Storage) -> Result<Self::Storage>;
    /// Every element: a scalar.
    fn sum(&self, x: &Self::Storage) -> Result<Self::Storage>;
    /// `value` in x's shape.
    fn fill(&self, like: &Self::Storage, value: f32) -> Result<Self::Storage>;
    fn copy(&self, x: &Self::Storage) -> Result<Self::Storage>;
    fn scalar_mul(&self, x: &Self::Storage, s: f32) -> Result<Self::Storage>;
    fn scalar_add(&self, x: &Self::Storage, s: f32) -> Result<Self::Storage>;

    /// gelu(x @ w1ᵀ + b1) @ w2ᵀ: x [batch, k], w1 [hidden, k], b1 [1, hidden], w2 [n, hidden].
    fn mlp_forward(
        &self,
        x: &Self::Storage,
        w1: &Self::Storage,
        b1: &Self::Storage,
        w2: &Self::Storage,
    ) -> Result<Self::Storage>;
}

/// `op` through the trait, on its inputs in `Op::inputs` order.
pub fn apply<B: Backend>(b: &B, op: Op, t: &[&B::Storage], scalar: f32) -> Result<B::Storage> {
    match op {
        Op::Add => b.add(t[0], t[1]),
        Op::Sub => b.sub(t[0], t[1]),
        Op::Mul => b.mul(t[0], t[1]),
        Op::Div => b.div(t[0], t[1]),
        Op::Relu => b.relu(t[0]),
        Op::ReluBackward => b.relu_backward(t[0], t[1]),
        Op::Sigmoid => b.sigmoid(t[0]),
        Op::Gelu => b.gelu(t[0]),
        Op::Exp => b.exp(t[0]),
        Op::Log => b.log(t[0]),
        Op::Powf => b.powf(t[0], scalar),
        Op::Softmax => b.softmax(t[0]),
        Op::Layernorm => b.layernorm(t[0], t[1], t[2]),
        Op::Sum => b.sum(t[0]),
        Op::Fill => b.fill(t[0], scalar),
        Op::Copy => b.copy(t[0]),
        Op::ScalarMul => b.scalar_mul(t[0], scalar),
        Op::ScalarAdd => b.scalar_add(t[0], scalar),
    }
}
