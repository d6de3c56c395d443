// The CSV podsim writes (a header line, no quoted commas), read back: a row each, by column.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace podsim::tools {

using CsvRow = std::map<std::string, std::string>;

inline std::vector<CsvRow> parse_csv(const std::string& text) {
  std::vector<CsvRow> rows;
  std::istringstream in(text);
  std::vector<std::string> head;
  for (std::string line; std::getline(in, line);) {
    if (head.empty() && line.rfind("# ", 0) == 0) continue;  // a failed run's mark
    std::vector<std::string> cells;
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, ',');)
      cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.emplace_back();  // an empty last cell
    if (head.empty()) {
      head = cells;
      continue;
    }
    CsvRow r;
    for (std::size_t i = 0; i < head.size() && i < cells.size(); ++i)
      r[head[i]] = cells[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace podsim::tools
