// Thin main: the window lives in main_window.cpp.
#include <QApplication>
#include <QLabel>
#include <QMainWindow>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("Cellscope");
  QApplication::setOrganizationName("Cellscope");
  QApplication::setApplicationVersion(CELLSCOPE_VERSION);
  QMainWindow w;
  w.setWindowTitle("Cellscope");
  w.setCentralWidget(new QLabel("Cellscope workbench"));
  w.resize(1200, 800);
  w.show();
  return app.exec();
}
