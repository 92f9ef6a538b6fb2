// Renders the SVG icon to a square PNG with Qt's SVG renderer; used at build
// time when rsvg-convert (librsvg2-bin) is not installed.
//   cellscope_render_icon ICON.svg SIZE OUT.png
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>
#include <cstdio>

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ICON.svg SIZE OUT.png\n", argv[0]);
    return 2;
  }
  QSvgRenderer svg(QString::fromLocal8Bit(argv[1]));
  const int size = QString::fromLocal8Bit(argv[2]).toInt();
  if (!svg.isValid() || size <= 0) {
    std::fprintf(stderr, "cannot render '%s' at size '%s'\n", argv[1], argv[2]);
    return 1;
  }
  QImage img(size, size, QImage::Format_ARGB32_Premultiplied);
  img.fill(Qt::transparent);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  svg.render(&p);
  p.end();
  return img.save(QString::fromLocal8Bit(argv[3]), "PNG") ? 0 : 1;
}
