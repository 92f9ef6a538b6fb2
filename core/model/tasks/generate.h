// Text generation from a trained char-LM or word-LM: seed text, temperature,
// a fixed random seed, and the model's probability of every token, for the shading
// that shows where the model was sure and where it guessed. See GENERATE_NOTES.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/json.h"

namespace cs {

class Task;

struct GenerateOptions {
  std::string seed_text;     // fed to the model first (scored, not sampled); may be empty
  int64_t length = 200;      // tokens to generate after the seed (characters or words)
  double temperature = 1.0;  // softmax(logits / T); T <= 0 (or < 1e-6) = greedy (argmax)
  uint64_t seed = 1;         // the sampler's own generator: same seed, same text
  int64_t top_k = 0;         // sample among the k most probable tokens only (0 = all)
  bool allow_unk = false;    // let <unk> be generated (word-LM corpora have many)
};

struct GeneratedToken {
  std::string text;  // the symbol as it reads in the text (a character, or a word)
  int32_t id = 0;
  double prob =
      0;  // the model's probability of this token given what precedes it (T = 1); NaN for the first seed token
  double sample_prob = 0;  // its probability under the sampling distribution (T, top-k); NaN for seed tokens
  bool from_seed = false;
};

struct Generation {
  std::string task;  // "char_lm" | "word_lm"
  std::vector<GeneratedToken> tokens;
  GenerateOptions options;
  int64_t unknown_seed_tokens = 0;  // seed symbols not in the vocabulary (fed as <unk>)
  // The text: characters concatenated; words joined by spaces with <eos> as a line break.
  std::string text() const;
  // Mean log2-probability of the generated (non-seed) tokens, as bits per token.
  double generated_bits_per_token() const;
  json to_json() const;
  // A standalone HTML page: every token a <span> shaded by surprisal_colour, p as its title,
  // the seed text underlined; `header` (plain text, escaped here) describes the sample.
  std::string to_html(const std::string& header) const;
};

// The shading of a token in the CLI's and the window's views: its surprisal -log2(p) on a
// 0..10-bit scale, clamped to [0, 1] (0 = certain, 1 = 10 bits or more; NaN -> 0). A log
// scale, so that word-level probabilities (mostly below 0.1) are not all one colour.
double surprisal_shade(double prob);
constexpr double kShadeFullBits = 10.0;
// The shade as a colour, white (0 bits) to (240, 80, 60) (10 bits or more): the CLI's HTML and
// the window's Generate tab draw with it.
struct Rgb {
  int r = 255, g = 255, b = 255;
};
Rgb surprisal_colour(double prob);

// Generates from a loaded char_lm or word_lm task (see load_run_task); the model is
// run in eval mode, without gradients, one token at a time with its state carried.
// Throws UserError for other tasks, an empty vocabulary, or options out of range.
Generation generate(Task& task, const GenerateOptions& options);

}  // namespace cs
