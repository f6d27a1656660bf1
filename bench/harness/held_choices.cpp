#include "harness/held_choices.hpp"

#include <fstream>
#include <iostream>
#include <stdexcept>

namespace gpubench {

void HeldChoices::open(const std::string& path) {
  path_ = path;
  choices_.clear();
  if (path.empty()) return;
  std::ifstream in(path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size())
      throw std::runtime_error(path + ":" + std::to_string(number) + ": expected 'key<TAB>choice'");
    choices_.emplace(line.substr(0, tab), line.substr(tab + 1));  // the first line of a key wins
  }
}

std::optional<std::string> HeldChoices::find(const std::string& key) const {
  const auto found = choices_.find(key);
  if (found == choices_.end()) return std::nullopt;
  return found->second;
}

void HeldChoices::record(const std::string& key, const std::string& choice) {
  if (key.find_first_of("\t\n") != std::string::npos || choice.find_first_of("\t\n") != std::string::npos)
    throw std::invalid_argument("held choice '" + key + "': a tab or newline in the key or the choice");
  if (path_.empty() || !choices_.emplace(key, choice).second) return;
  std::ofstream out(path_, std::ios::app);
  out << key << '\t' << choice << '\n';
  if (!out) std::cerr << "cannot append to the held-choices file " << path_ << "\n";
}

HeldChoices& held_choices() {
  static HeldChoices choices;
  return choices;
}

}  // namespace gpubench
