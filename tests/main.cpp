#include <QApplication>
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>

#include <cstdio>
#include <map>
#include <memory>

#include "harness.h"

namespace cstest {
static std::map<std::string, std::function<QObject*()>>& registry() {
  static std::map<std::string, std::function<QObject*()>> r;
  return r;
}
int register_test(const char* name, std::function<QObject*()> factory) {
  registry()[name] = std::move(factory);
  return 0;
}
QString temp_dir() {
  static std::unique_ptr<QTemporaryDir> dir = [] {
    auto d = std::make_unique<QTemporaryDir>(QDir::tempPath() + "/cellscope-test-XXXXXX");
    d->setAutoRemove(qgetenv("CS_KEEP_TMP") != "1");
    return d;
  }();
  return dir->path();
}
QString cli_path() { return QStringLiteral(CELLSCOPE_CLI_PATH); }
QString source_dir() { return QStringLiteral(CELLSCOPE_SOURCE_DIR); }
int run_cli(const QStringList& args, QString* out, QString* err, int timeout_ms) {
  QProcess p;
  p.start(cli_path(), args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    if (err) *err = "timeout";
    return -1;
  }
  if (out) *out = QString::fromUtf8(p.readAllStandardOutput());
  if (err) *err = QString::fromUtf8(p.readAllStandardError());
  return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
}
}  // namespace cstest

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  auto& reg = cstest::registry();
  if (argc < 2 || reg.find(argv[1]) == reg.end()) {
    std::fprintf(stderr, "usage: %s TEST [qtest options]\ntests:", argv[0]);
    for (auto& kv : reg) std::fprintf(stderr, " %s", kv.first.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  std::unique_ptr<QObject> obj(reg[argv[1]]());
  // Pass the remaining arguments to Qt Test (argv[0] kept as program name).
  std::vector<char*> args;
  args.push_back(argv[0]);
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  return QTest::qExec(obj.get(), static_cast<int>(args.size()), args.data());
}
