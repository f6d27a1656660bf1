// A library's choice for one configuration (cuDNN's engine for a convolution), held across the
// processes of a run. The driver gives every trial the same file (--held-choices=F): the first
// process to configure a key autotunes and records its choice there, later ones take it, so the
// trials of an entry time the same algorithm and the spread between them is the machine's, not
// the autotuner's (in the A/A runs cuDNN chose differently in 8 to 10 of 56 convolution entries).
#pragma once

#include <map>
#include <optional>
#include <string>

namespace gpubench {

class HeldChoices {
 public:
  // Reads the choices `path` holds (a missing file holds none); empty: nothing held or recorded.
  // Throws std::runtime_error on a line that is not "key<TAB>choice".
  void open(const std::string& path);
  // The choice recorded for `key` by an earlier process, if any.
  std::optional<std::string> find(const std::string& key) const;
  // Appends `key`'s choice to the file (a key already held keeps its first choice). Keys and
  // choices are single-line text without tabs.
  void record(const std::string& key, const std::string& choice);

 private:
  std::string path_;
  std::map<std::string, std::string> choices_;
};

// The process's held choices, opened by run_study from --held-choices.
HeldChoices& held_choices();

}  // namespace gpubench
