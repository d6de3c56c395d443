// Pretty JSON text with readable numbers (812.5, not Boost.JSON's 8.125E2).
#pragma once

#include <boost/json/value.hpp>
#include <string>

namespace podsim::config {

std::string to_pretty_json(const boost::json::value& v);

}  // namespace podsim::config
