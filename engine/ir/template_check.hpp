#pragma once
// The checks of a user template's declarations (engine/ir/template.cpp): a graph declaring one
// and a launch of one rely on them.

#include <kiln/template.hpp>
#include <string>

namespace kiln {

/// Checks a header name of template `tmpl`: a relative file name, not kiln's own header's nor
/// the template's; ArgumentError otherwise.
void check_header(const std::string& tmpl, const std::string& name);

/// Checks the template's own declarations (names, parameters, tunables, rule syntax);
/// ArgumentError naming what is wrong.
void check_template(const Template& t);

/// Whether the instance names integer parameter `p` ({n}): each value is a kernel of its own.
bool in_instance(const Template& t, const TemplateParam& p);

}  // namespace kiln
