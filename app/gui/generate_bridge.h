// Text generation for the window, torch-free: plain structs in and out, so
// the panel's worker thread and the GUI thread exchange no tensors. The implementation
// (generate_bridge.cpp) is the only file of the panel that reaches the core.
#pragma once
#include <QString>
#include <QVector>

namespace gui {

struct GenRequest {
  QString runDir;
  QString checkpoint = QStringLiteral("best");  // best | last | a step number
  QString seedText;
  int length = 300;
  double temperature = 0.8;
  quint64 seed = 1;
  int topK = 0;
};

struct GenToken {
  QString text;     // as it reads: a character, or a word ("\n" for <eos>)
  double prob = 0;  // the model's probability of the token (NaN: the first seed token)
  bool seed = false;
};

struct GenResult {
  QVector<GenToken> tokens;
  QString task;   // char_lm | word_lm
  QString error;  // non-empty: one clear message, nothing else is valid
  double bitsPerToken = 0;
  int unknownSeed = 0;  // seed symbols the run's vocabulary lacks
  double seconds = 0;
  QString html;  // the sample as a standalone HTML page (cs::Generation::to_html)
};

// The shading of a token (cs::surprisal_colour): white (0 bits) to red (10 bits or more).
void surprisalColour(double prob, int* r, int* g, int* b);

// Runs on any thread; never throws.
GenResult runGeneration(const GenRequest& r);

}  // namespace gui
