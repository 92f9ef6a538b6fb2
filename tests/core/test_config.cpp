// Configuration validation: every problem reported with its JSON path; defaults; overrides.
#include "config/schema.h"
#include "harness.h"
#include "util/error.h"

using namespace cs;

namespace {
bool has_error(const std::vector<ConfigError>& errs, const std::string& path, const std::string& fragment = "") {
  for (auto& e : errs)
    if (e.path == path && (fragment.empty() || e.message.find(fragment) != std::string::npos)) return true;
  return false;
}
QString dump(const std::vector<ConfigError>& errs) {
  QString s;
  for (auto& e : errs) s += QString::fromStdString(e.str()) + "\n";
  return s;
}
}  // namespace

class TestConfig : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void minimalConfigIsValidAndResolved() {
    json cfg = {{"task", "char_lm"}, {"model", {{"cell", "gru"}}}};
    QVERIFY2(validate_config(cfg).empty(), qPrintable(dump(validate_config(cfg))));
    json r = resolve_config(cfg);
    QCOMPARE(r["task"]["name"].get<std::string>(), std::string("char_lm"));
    QCOMPARE(r["model"]["hidden"].get<int>(), 256);
    QCOMPARE(r["training"]["optimizer"].get<std::string>(), std::string("adam"));
    QVERIFY(r["training"].contains("bptt"));  // task-specific option filled in
    QVERIFY(!r["model"].contains("depth"));   // gru has no depth option
  }

  void everyProblemNamesItsPath() {
    json cfg = {{"task", "char_lm"},
                {"model", {{"cell", "gru"}, {"hiden", 5}, {"hidden", "big"}, {"layers", 0}, {"depth", 2}}},
                {"training", {{"lr", -1}, {"optimizer", "rmsprop"}, {"batch", 3.5}}},
                {"dataset", {{"valid_fraction", 0.9}}}};
    auto errs = validate_config(cfg);
    QVERIFY2(has_error(errs, "model.hiden", "unknown option"), qPrintable(dump(errs)));
    QVERIFY(has_error(errs, "model.hidden", "expected an integer"));
    QVERIFY(has_error(errs, "model.layers", "[1,"));
    QVERIFY(has_error(errs, "model.depth", "not available for cell 'gru'"));
    QVERIFY(has_error(errs, "model.depth", "gru_dt"));  // says where it is available
    QVERIFY(has_error(errs, "training.lr"));
    QVERIFY(has_error(errs, "training.optimizer", "adam"));
    QVERIFY(has_error(errs, "training.batch", "integer"));
    QVERIFY(has_error(errs, "dataset.valid_fraction"));
    QCOMPARE(static_cast<int>(errs.size()), 8);
  }

  void unknownSectionAndCell() {
    auto errs = validate_config({{"modle", json::object()}});
    QVERIFY(has_error(errs, "modle", "unknown section"));
    errs = validate_config({{"model", {{"cell", "transformer"}}}});
    QVERIFY(has_error(errs, "model.cell", "gru"));
    errs = validate_config(json::array());
    QVERIFY(has_error(errs, "$"));
  }

  void optionAvailableForItsCell() {
    json cfg = {{"model", {{"cell", "gru_dt"}, {"depth", 3}, {"share_transition", true}}}};
    QVERIFY2(validate_config(cfg).empty(), qPrintable(dump(validate_config(cfg))));
    QCOMPARE(resolve_config(cfg)["model"]["depth"].get<int>(), 3);
    auto errs = validate_config({{"model", {{"cell", "gru_dt"}, {"depth", -1}}}});
    QVERIFY(has_error(errs, "model.depth"));
  }

  void overrides() {
    json cfg = {{"model", {{"cell", "gru"}}}};
    apply_override(cfg, "model.hidden=512");
    apply_override(cfg, "model.cell=lstm");
    apply_override(cfg, "training.lr=3e-4");
    apply_override(cfg, "model.layer_norm=true");
    QCOMPARE(cfg["model"]["hidden"].get<int>(), 512);
    QCOMPARE(cfg["model"]["cell"].get<std::string>(), std::string("lstm"));
    QCOMPARE(cfg["training"]["lr"].get<double>(), 3e-4);
    QCOMPARE(cfg["model"]["layer_norm"].get<bool>(), true);
    QVERIFY(validate_config(cfg).empty());
    bool threw = false;
    try {
      apply_override(cfg, "hidden512");
    } catch (const UserError& e) {
      threw = std::string(e.what()).find("SECTION.KEY=VALUE") != std::string::npos;
    }
    QVERIFY(threw);
  }

  void loadAndResolveListsEveryProblem() {
    bool threw = false;
    try {
      load_and_resolve({{"model", {{"hidden", 0}, {"embed", -3}}}});
    } catch (const UserError& e) {
      std::string w = e.what();
      threw = w.find("model.hidden") != std::string::npos && w.find("model.embed") != std::string::npos;
    }
    QVERIFY(threw);
  }

  void schemaHasHelpForEveryOption() {
    for (auto& o : all_options()) QVERIFY2(!o.help.empty(), qPrintable(QString::fromStdString(o.path())));
  }
};

CS_TEST(TestConfig, "config")
#include "test_config.moc"
