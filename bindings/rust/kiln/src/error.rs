//! kiln's failures as one error type: the class (kiln::Error's subclass in C++, a kiln_status in
//! C) and the message, which says what to change.
use kiln_sys as sys;
use std::ffi::CStr;
use std::fmt;

/// The class of a failure, one per `kiln_status` error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// A bad argument: a name with a NUL byte, a node not in the graph, a count that differs.
    Argument,
    /// Shapes that do not fit the op, the graph or the view.
    Shape,
    /// Dtypes that do not fit.
    Dtype,
    /// A malformed graph: JSON, names, references, an unknown op or attribute.
    Graph,
    /// NVRTC rejected a kernel (the message quotes the numbered source).
    Compile,
    /// A CUDA driver call failed, there is no GPU, or an offline engine was asked to run.
    Cuda,
    /// The kernel cache refused a directory or an entry.
    Cache,
    /// Host memory ran out.
    OutOfMemory,
    /// A bug in kiln (or a status this crate does not know): please report the message.
    Internal,
}

impl ErrorClass {
    /// The class of a failed `status`; None for `KILN_OK`.
    pub fn from_status(status: sys::kiln_status) -> Option<ErrorClass> {
        Some(match status {
            sys::KILN_OK => return None,
            sys::KILN_ERROR_ARGUMENT => ErrorClass::Argument,
            sys::KILN_ERROR_SHAPE => ErrorClass::Shape,
            sys::KILN_ERROR_DTYPE => ErrorClass::Dtype,
            sys::KILN_ERROR_GRAPH => ErrorClass::Graph,
            sys::KILN_ERROR_COMPILE => ErrorClass::Compile,
            sys::KILN_ERROR_CUDA => ErrorClass::Cuda,
            sys::KILN_ERROR_CACHE => ErrorClass::Cache,
            sys::KILN_ERROR_OUT_OF_MEMORY => ErrorClass::OutOfMemory,
            _ => ErrorClass::Internal,
        })
    }

    /// The `kiln_status` of the class.
    pub fn status(self) -> sys::kiln_status {
        match self {
            ErrorClass::Argument => sys::KILN_ERROR_ARGUMENT,
            ErrorClass::Shape => sys::KILN_ERROR_SHAPE,
            ErrorClass::Dtype => sys::KILN_ERROR_DTYPE,
            ErrorClass::Graph => sys::KILN_ERROR_GRAPH,
            ErrorClass::Compile => sys::KILN_ERROR_COMPILE,
            ErrorClass::Cuda => sys::KILN_ERROR_CUDA,
            ErrorClass::Cache => sys::KILN_ERROR_CACHE,
            ErrorClass::OutOfMemory => sys::KILN_ERROR_OUT_OF_MEMORY,
            ErrorClass::Internal => sys::KILN_ERROR_INTERNAL,
        }
    }

    /// The library's name of the class: "argument", "shape", ..., "out of memory".
    pub fn name(self) -> &'static str {
        // SAFETY: kiln_status_name returns a static NUL-terminated string for any value.
        let s = unsafe { CStr::from_ptr(sys::kiln_status_name(self.status())) };
        s.to_str().unwrap_or("unknown status")
    }
}

/// A failure of a kiln call: its class and message (the C function's name first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    class: ErrorClass,
    message: String,
}

impl Error {
    /// An error made on the Rust side (a check before the C call).
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Error {
        Error { class, message: message.into() }
    }
    pub fn class(&self) -> ErrorClass {
        self.class
    }
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kiln ({}): {}", self.class.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Ok for `KILN_OK`, else this thread's last error (the C API records it before returning).
pub(crate) fn check(status: sys::kiln_status) -> Result<()> {
    match ErrorClass::from_status(status) {
        None => Ok(()),
        Some(class) => {
            // SAFETY: the string stays valid until this thread's next failure; copied at once.
            let message = unsafe { CStr::from_ptr(sys::kiln_last_error()) };
            Err(Error { class, message: message.to_string_lossy().into_owned() })
        }
    }
}

/// `s` as a C string; an Argument error naming `what` if it holds a NUL byte.
pub(crate) fn c_string(s: &str, what: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s).map_err(|_| {
        Error::new(
            ErrorClass::Argument,
            format!("{} {:?} contains a NUL byte: kiln's strings are C strings", what, s),
        )
    })
}
