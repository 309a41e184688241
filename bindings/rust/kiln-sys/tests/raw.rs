// What the safe wrapper cannot express, called raw: NULL handles and pointers, a negative rank
// and a dtype code that is not one are status codes with a message, never a crash.
use kiln_sys::*;
use std::ffi::CStr;
use std::ptr::{null, null_mut};

fn last() -> (kiln_status, String) {
    // SAFETY: kiln_last_error returns a NUL-terminated string valid until this thread's next
    // failure.
    unsafe { (kiln_last_error_class(), CStr::from_ptr(kiln_last_error()).to_string_lossy().into()) }
}

fn fails(status: kiln_status, want: kiln_status, needle: &str) {
    let (class, message) = last();
    assert_eq!(status, want, "{}", message);
    assert_eq!(class, want, "{}", message);
    assert!(message.contains(needle), "'{}' does not contain '{}'", message, needle);
}

#[test]
fn the_library_is_the_header_version() {
    assert_eq!(unsafe { kiln_version() }, KILN_ABI_VERSION);
}

#[test]
fn nulls_a_negative_rank_and_a_bad_dtype_code_are_status_codes() {
    unsafe {
        let mut g: *mut kiln_graph = null_mut();
        assert_eq!(kiln_graph_create(&mut g), KILN_OK);
        let shape = [4i64, 8];
        let mut node = -1;
        let x = b"x\0".as_ptr() as *const _;
        fails(
            kiln_graph_input(g, x, shape.as_ptr(), -1, KILN_F32, &mut node),
            KILN_ERROR_SHAPE,
            "rank -1 is negative",
        );
        fails(kiln_graph_input(g, x, shape.as_ptr(), 2, 17, &mut node), KILN_ERROR_DTYPE, "dtype code 17");
        fails(
            kiln_graph_input(g, x, null(), 2, KILN_F32, &mut node),
            KILN_ERROR_ARGUMENT,
            "extents are NULL",
        );
        fails(
            kiln_graph_input(null_mut(), x, shape.as_ptr(), 2, KILN_F32, &mut node),
            KILN_ERROR_ARGUMENT,
            "graph is NULL",
        );
        fails(
            kiln_graph_input(g, null(), shape.as_ptr(), 2, KILN_F32, &mut node),
            KILN_ERROR_ARGUMENT,
            "name is NULL",
        );
        fails(kiln_engine_synchronize(null_mut()), KILN_ERROR_ARGUMENT, "engine is NULL");
        fails(kiln_buffer_create(null_mut(), 16, null_mut()), KILN_ERROR_ARGUMENT, "is NULL");
        assert_eq!(kiln_graph_destroy(g), KILN_OK);
        assert_eq!(kiln_graph_destroy(null_mut()), KILN_OK);
    }
}
