#include "export.h"

#include <QFile>
#include <QFileInfo>
#include <QFontInfo>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSet>
#include <QSvgGenerator>
#include <QWidget>

#include <cmath>
#include <functional>
#include <vector>

#include "qcp.h"
#include "util/csv.h"

namespace csw {

void ExportableView::renderFigure(QPainter* painter, const QRect& target) const {
  // Default for custom-painted views: render the widget itself.
  auto* w = dynamic_cast<const QWidget*>(this);
  if (!w) return;
  painter->save();
  painter->translate(target.topLeft());
  if (w->width() > 0 && w->height() > 0)
    painter->scale(double(target.width()) / w->width(), double(target.height()) / w->height());
  const_cast<QWidget*>(w)->render(painter, QPoint(), QRegion(), QWidget::DrawChildren);
  painter->restore();
}

QString csvField(const QString& s) { return QString::fromStdString(cs::csv_field(s.toStdString())); }

QList<QStringList> csvRecords(const QString& csv) {
  QList<QStringList> out;
  for (const auto& rec : cs::csv_records(csv.toStdString())) {
    QStringList fields;
    for (const auto& f : rec) fields << QString::fromStdString(f);
    out << fields;
  }
  return out;
}

QString csvNumber(double v) {
  if (std::isnan(v)) return QString();
  // Shortest text that reads back as the same double.
  for (int prec = 6; prec < 17; ++prec) {
    const QString t = QString::number(v, 'g', prec);
    if (t.toDouble() == v) return t;
  }
  return QString::number(v, 'g', 17);
}

static void setErr(QString* error, const QString& msg) {
  if (error) *error = msg;
}

bool writeCsvFile(const QString& csv, const QString& path, QString* error) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    setErr(error, QStringLiteral("cannot open %1: %2").arg(path, f.errorString()));
    return false;
  }
  f.write(csv.toUtf8());
  if (!f.commit()) {
    setErr(error, QStringLiteral("cannot write %1: %2").arg(path, f.errorString()));
    return false;
  }
  return true;
}

bool exportCsv(QWidget* view, const QString& path, QString* error) {
  auto* ev = dynamic_cast<ExportableView*>(view);
  if (!ev) {
    setErr(error, QStringLiteral("view does not provide CSV data"));
    return false;
  }
  return writeCsvFile(ev->toCsv(), path, error);
}

namespace {

// Collects undo actions; runs them in reverse order on destruction.
class Restorer {
 public:
  ~Restorer() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  }
  void add(std::function<void()> f) { undo_.push_back(std::move(f)); }

 private:
  std::vector<std::function<void()>> undo_;
};

QFont exportFont(QFont f, const ExportOptions& o, double sizeFactor = 1.0) {
  if (!o.fontFamily.isEmpty()) f.setFamily(o.fontFamily);
  if (o.fontPointSize > 0) f.setPointSizeF(o.fontPointSize * sizeFactor);
  return f;
}

void applyAxisFont(QCPAxis* ax, const ExportOptions& o, Restorer& r) {
  const QFont lf = ax->labelFont(), tf = ax->tickLabelFont();
  ax->setLabelFont(exportFont(lf, o));
  ax->setTickLabelFont(exportFont(tf, o));
  r.add([ax, lf, tf] {
    ax->setLabelFont(lf);
    ax->setTickLabelFont(tf);
  });
}

// Applies the export font to every text of a QCustomPlot, registering the undo.
void applyPlotFont(QCustomPlot* plot, const ExportOptions& o, Restorer& r) {
  if (o.fontFamily.isEmpty() && o.fontPointSize <= 0) return;
  QSet<QCPAxis*> axesDone;
  QSet<QCPLegend*> legendsDone;
  auto doAxis = [&](QCPAxis* ax) {
    if (ax && !axesDone.contains(ax)) {
      axesDone.insert(ax);
      applyAxisFont(ax, o, r);
    }
  };
  auto doLegend = [&](QCPLegend* lg) {
    if (!lg || legendsDone.contains(lg)) return;
    legendsDone.insert(lg);
    const QFont f = lg->font();
    lg->setFont(exportFont(f, o));
    QList<QPair<QCPAbstractLegendItem*, QFont>> items;
    for (int i = 0; i < lg->itemCount(); ++i) {
      QCPAbstractLegendItem* it = lg->item(i);
      items.append({it, it->font()});
      it->setFont(exportFont(it->font(), o));
    }
    r.add([lg, f, items] {
      lg->setFont(f);
      for (const auto& p : items) p.first->setFont(p.second);
    });
  };
  for (QCPAxisRect* ar : plot->axisRects())
    for (QCPAxis* ax : ar->axes()) doAxis(ax);
  for (QCPLayoutElement* el : plot->plotLayout()->elements(true)) {
    if (auto* te = dynamic_cast<QCPTextElement*>(el)) {
      const QFont f = te->font();
      // Titles keep being 20% larger than the body text.
      te->setFont(exportFont(f, o, 1.2));
      r.add([te, f] { te->setFont(f); });
    } else if (auto* cs = dynamic_cast<QCPColorScale*>(el)) {
      doAxis(cs->axis());
    } else if (auto* lg = dynamic_cast<QCPLegend*>(el)) {
      doLegend(lg);
    }
  }
  doLegend(plot->legend);
  for (int i = 0; i < plot->itemCount(); ++i) {
    if (auto* t = dynamic_cast<QCPItemText*>(plot->item(i))) {
      const QFont f = t->font();
      QFont nf = exportFont(f, o);
      // Cell value texts of heatmaps are deliberately small: keep their relative size.
      if (o.fontPointSize > 0 && f.pointSizeF() > 0 && QFont().pointSizeF() > 0)
        nf.setPointSizeF(o.fontPointSize * f.pointSizeF() / QFont().pointSizeF());
      t->setFont(nf);
      r.add([t, f] { t->setFont(f); });
    }
  }
}

QSize figureSizeFor(QWidget* view, QCustomPlot* plot, ExportableView* ev, const ExportOptions& o) {
  QSize s = o.size;
  if (s.isEmpty() && ev) s = ev->figureSize();
  if (s.isEmpty() && plot) s = plot->size();
  if (s.isEmpty()) s = view->size();
  if (s.width() < 50 || s.height() < 50) s = QSize(640, 480);
  return s;
}

// An SVG of sz logical pixels (96 dpi), titled and described as the options say.
void setupSvg(QSvgGenerator* gen, const QString& path, const QSize& sz, const ExportOptions& o) {
  gen->setFileName(path);
  gen->setSize(sz);
  gen->setViewBox(QRect(QPoint(0, 0), sz));
  gen->setResolution(96);
  gen->setTitle(o.title);
  gen->setDescription(o.creator);
}

}  // namespace

QString svgFontFamily(const QString& qtFamily) {
  // Qt's own alias ("Sans Serif") means nothing to a browser or Inkscape, which drew the figure
  // in their default (often serif) font: wider or narrower than the text Qt measured and
  // wrapped, so a caption line ran past the viewBox. The font Qt resolved and drew with, then
  // the CSS generic family of its kind for a viewer without it.
  const QFontInfo info{QFont(qtFamily)};
  const QString resolved = info.family().isEmpty() ? qtFamily : info.family();
  QString generic = QStringLiteral("sans-serif");
  if (info.fixedPitch()) generic = QStringLiteral("monospace");
  else if (resolved.contains(QLatin1String("Serif"), Qt::CaseInsensitive) &&
           !resolved.contains(QLatin1String("Sans"), Qt::CaseInsensitive))
    generic = QStringLiteral("serif");
  if (resolved.compare(generic, Qt::CaseInsensitive) == 0) return generic;
  return resolved + QStringLiteral(", ") + generic;
}

namespace {

// Rewrites every font-family of a written SVG as svgFontFamily() says (QSvgGenerator writes
// the QFont's family as given).
bool portableSvgFonts(const QString& path, QString* error) {
  QFile in(path);
  if (!in.open(QIODevice::ReadOnly)) {
    setErr(error, QStringLiteral("cannot read back %1: %2").arg(path, in.errorString()));
    return false;
  }
  const QString svg = QString::fromUtf8(in.readAll());
  in.close();
  static const QRegularExpression attr(QStringLiteral("font-family=\"([^\"]*)\""));
  QString out;
  out.reserve(svg.size() + 1024);
  qsizetype from = 0;
  for (auto it = attr.globalMatch(svg); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    out += QStringView(svg).mid(from, m.capturedStart(1) - from);
    out += svgFontFamily(m.captured(1)).toHtmlEscaped();
    from = m.capturedEnd(1);
  }
  out += QStringView(svg).mid(from);
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(out.toUtf8()) < 0 || !f.commit()) {
    setErr(error, QStringLiteral("cannot write %1: %2").arg(path, f.errorString()));
    return false;
  }
  return true;
}

bool exportPlot(QCustomPlot* plot, const QString& path, const QString& ext, const QSize& sz, const ExportOptions& o,
                QString* error) {
  bool ok = false;
  if (ext == QLatin1String("png")) {
    ok = plot->savePng(path, sz.width(), sz.height(), o.scale, -1, o.dpi, QCP::ruDotsPerInch);
  } else if (ext == QLatin1String("pdf")) {
    QString title = o.title;
    ok = plot->savePdf(path, sz.width(), sz.height(), QCP::epNoCosmetic, o.creator, title);
  } else if (ext == QLatin1String("svg")) {
    QSvgGenerator gen;
    setupSvg(&gen, path, sz, o);
    QCPPainter painter;
    if (painter.begin(&gen)) {
      painter.setMode(QCPPainter::pmVectorized);
      painter.setMode(QCPPainter::pmNoCaching);
      painter.setMode(QCPPainter::pmNonCosmetic);
      plot->toPainter(&painter, sz.width(), sz.height());
      ok = painter.end() && portableSvgFonts(path, error);
      if (!ok) return false;
    }
  }
  if (!ok) setErr(error, QStringLiteral("could not write %1").arg(path));
  return ok;
}

bool exportPainted(QWidget* view, ExportableView* ev, const QString& path, const QString& ext, const QSize& sz,
                   const ExportOptions& o, QString* error) {
  auto paint = [&](QPainter* p) {
    p->setRenderHint(QPainter::Antialiasing, true);
    p->setRenderHint(QPainter::TextAntialiasing, true);
    const QRect target(QPoint(0, 0), sz);
    if (ev) {
      ev->renderFigure(p, target);
    } else {
      p->save();
      if (view->width() > 0 && view->height() > 0)
        p->scale(double(sz.width()) / view->width(), double(sz.height()) / view->height());
      view->render(p, QPoint(), QRegion(), QWidget::DrawChildren);
      p->restore();
    }
  };
  if (ext == QLatin1String("png")) {
    const double scale = o.scale > 0 ? o.scale : 1.0;
    QImage img(qRound(sz.width() * scale), qRound(sz.height() * scale), QImage::Format_ARGB32_Premultiplied);
    img.fill(Qt::white);
    // Paint at screen-like 96 DPI so text has the same proportions as on screen...
    img.setDotsPerMeterX(qRound(96 / 0.0254));
    img.setDotsPerMeterY(qRound(96 / 0.0254));
    {
      QPainter p(&img);
      p.scale(scale, scale);
      paint(&p);
    }
    // ...and record the requested DPI in the file.
    img.setDotsPerMeterX(qRound(o.dpi / 0.0254));
    img.setDotsPerMeterY(qRound(o.dpi / 0.0254));
    if (!img.save(path, "PNG")) {
      setErr(error, QStringLiteral("could not write %1").arg(path));
      return false;
    }
    return true;
  }
  if (ext == QLatin1String("pdf")) {
    QPdfWriter pw(path);
    pw.setCreator(o.creator);
    pw.setTitle(o.title);
    pw.setResolution(96);
    // Page = figure size in points, no margins: a tight bounding box for LaTeX.
    pw.setPageLayout(QPageLayout(QPageSize(QSizeF(sz), QPageSize::Point, QString(), QPageSize::ExactMatch),
                                 QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
    QPainter p;
    if (!p.begin(&pw)) {
      setErr(error, QStringLiteral("could not write %1").arg(path));
      return false;
    }
    p.setWindow(QRect(QPoint(0, 0), sz));
    p.setViewport(QRect(0, 0, pw.width(), pw.height()));
    paint(&p);
    p.end();
    return QFileInfo(path).size() > 0;
  }
  if (ext == QLatin1String("svg")) {
    QSvgGenerator gen;
    setupSvg(&gen, path, sz, o);
    QPainter p;
    if (!p.begin(&gen)) {
      setErr(error, QStringLiteral("could not write %1").arg(path));
      return false;
    }
    paint(&p);
    p.end();
    return portableSvgFonts(path, error);
  }
  return false;
}

}  // namespace

bool exportFigure(QWidget* view, const QString& path, const ExportOptions& options, QString* error) {
  if (!view) {
    setErr(error, QStringLiteral("no view"));
    return false;
  }
  const QString ext = QFileInfo(path).suffix().toLower();
  if (ext == QLatin1String("csv")) return exportCsv(view, path, error);
  if (ext != QLatin1String("png") && ext != QLatin1String("pdf") && ext != QLatin1String("svg")) {
    setErr(error, QStringLiteral("unsupported export format '%1' (use .png, .pdf, .svg or .csv)").arg(ext));
    return false;
  }
  auto* ev = dynamic_cast<ExportableView*>(view);
  QCustomPlot* plot = qobject_cast<QCustomPlot*>(view);
  if (!plot && ev) plot = ev->figurePlot();
  if (!plot && !ev) plot = view->findChild<QCustomPlot*>();
  const QSize sz = figureSizeFor(view, plot, ev, options);

  Restorer restore;
  if (!options.title.isEmpty() && ev) {
    const QString old = ev->replaceTitle(options.title);
    restore.add([ev, old] { ev->replaceTitle(old); });
  }
  if (plot) {
    restore.add([plot] { plot->replot(QCustomPlot::rpQueuedReplot); });
    applyPlotFont(plot, options, restore);
    bool ok = exportPlot(plot, path, ext, sz, options, error);
    return ok;
  }
  if (!options.fontFamily.isEmpty() || options.fontPointSize > 0) {
    const QFont f = view->font();
    const bool had = view->testAttribute(Qt::WA_SetFont);
    view->setFont(exportFont(f, options));
    restore.add([view, f, had] {
      view->setFont(f);
      if (!had) view->setAttribute(Qt::WA_SetFont, false);
    });
  }
  return exportPainted(view, ev, path, ext, sz, options, error);
}

}  // namespace csw
