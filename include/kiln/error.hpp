#pragma once
/// \file
/// Every failure kiln reports is a kiln::Error; the subclass says which stage failed.

#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln {

/// `name` as messages and tables print it: quotes, backslashes, control and non-ASCII bytes
/// escaped (`\n`, `\x1b`), cut at 80 bytes with "...".
std::string printable_name(std::string_view name);

/// Base of every exception kiln throws. what() says what happened, to which object, and
/// what the user can do about it.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A CUDA Driver API call failed (or no driver could be loaded).
class CudaError : public Error {
 public:
  CudaError(int result, std::string call, std::string object, const std::string& message)
      : Error(message), result_(result), call_(std::move(call)), object_(std::move(object)) {}
  int result() const { return result_; }  ///< the CUresult; -1 when the driver is missing
  const std::string& call() const { return call_; }
  const std::string& object() const { return object_; }

 private:
  int result_;
  std::string call_;
  std::string object_;
};

/// NVRTC rejected a kernel. log() holds the whole NVRTC log; what() adds the numbered
/// source around each error line.
class CompileError : public Error {
 public:
  CompileError(const std::string& message, std::string kernel, std::string log, std::string options)
      : Error(message),
        kernel_(std::move(kernel)),
        log_(std::move(log)),
        options_(std::move(options)) {}
  const std::string& kernel() const { return kernel_; }
  const std::string& log() const { return log_; }
  const std::string& options() const { return options_; }

 private:
  std::string kernel_;
  std::string log_;
  std::string options_;
};

/// The kernel cache refused a directory or entry, or could not be used.
class CacheError : public Error {
 public:
  using Error::Error;
};

/// Operand shapes do not fit the op (broadcasting, views, extents).
class ShapeError : public Error {
 public:
  using Error::Error;
};

/// Operand dtypes do not fit the op.
class DtypeError : public Error {
 public:
  using Error::Error;
};

/// A graph file or graph under construction is malformed: unknown op, missing field,
/// duplicate name, reference to a later node. The message names the node and the field.
class GraphError : public Error {
 public:
  using Error::Error;
};

/// A bad argument that is neither a shape nor a dtype: unknown op, null pointer, bad option.
class ArgumentError : public Error {
 public:
  using Error::Error;
};

}  // namespace kiln
