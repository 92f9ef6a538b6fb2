#include "generate_bridge.h"

#include <QElapsedTimer>

#include <exception>

#include "tasks/generate.h"
#include "tasks/task.h"
#include "train/trainer.h"

namespace gui {

void surprisalColour(double prob, int* r, int* g, int* b) {
  const cs::Rgb c = cs::surprisal_colour(prob);
  *r = c.r;
  *g = c.g;
  *b = c.b;
}

GenResult runGeneration(const GenRequest& r) {
  GenResult out;
  QElapsedTimer timer;
  timer.start();
  try {
    auto task = cs::load_run_task(r.runDir.toStdString(), r.checkpoint.toStdString());
    cs::GenerateOptions o;
    o.seed_text = r.seedText.toStdString();
    o.length = r.length;
    o.temperature = r.temperature;
    o.seed = r.seed;
    o.top_k = r.topK;
    auto g = cs::generate(*task, o);
    out.task = QString::fromStdString(g.task);
    const bool words = g.task == "word_lm";
    bool lineStart = true;
    for (auto& t : g.tokens) {
      GenToken k;
      QString s = QString::fromStdString(t.text);
      if (words) {
        if (s == QStringLiteral("<eos>")) s = QStringLiteral("\n");
        else if (!lineStart) s.prepend(QLatin1Char(' '));
      }
      lineStart = s == QStringLiteral("\n");
      k.text = s;
      k.prob = t.prob;
      k.seed = t.from_seed;
      out.tokens.push_back(k);
    }
    out.bitsPerToken = g.generated_bits_per_token();
    out.unknownSeed = static_cast<int>(g.unknown_seed_tokens);
    out.html = QString::fromStdString(
        g.to_html("Run: " + r.runDir.toStdString() + ", checkpoint " + r.checkpoint.toStdString() + ", temperature " +
                  std::to_string(r.temperature) + ", seed " + std::to_string(r.seed) + "."));
  } catch (const std::exception& e) {
    std::string w = e.what();
    out.error = QString::fromStdString(w.substr(0, w.find("\nException raised from")));
    out.tokens.clear();
  }
  out.seconds = static_cast<double>(timer.nsecsElapsed()) * 1e-9;
  return out;
}

}  // namespace gui
