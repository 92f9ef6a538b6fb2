// Whether a tab of the main window fits a small window: shown at `size` with one panel, its page
// ("tabScroll_<title>", a QScrollArea) needs no horizontal scroll bar, and the given widgets lie
// inside the page's visible width. The GUI tests' `fitsA1024x700Window` checks use it.
#pragma once
#include <QApplication>
#include <QScrollArea>
#include <QScrollBar>
#include <QWidget>
#include <QtTest/QtTest>

#include "main_window.h"

namespace cstest {

// "" when the tab fits, else what does not (for QVERIFY2).
inline QString tabFitsWindow(gui::MainWindow& w, const QString& panel, const QString& title,
                             const QList<QWidget*>& inside, QSize size = QSize(1024, 700)) {
  w.resize(size);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) return QStringLiteral("the window was not shown");
  w.resize(size);
  if (!w.showPanel(panel)) return QStringLiteral("no panel '%1'").arg(panel);
  QApplication::processEvents();
  QTest::qWait(50);
  auto* page = w.findChild<QScrollArea*>(QStringLiteral("tabScroll_") + title);
  if (!page) return QStringLiteral("no tab page tabScroll_%1").arg(title);
  if (page->horizontalScrollBar()->isVisible())
    return QStringLiteral("tab %1 px wide in a %2 px viewport")
        .arg(page->widget()->width())
        .arg(page->viewport()->width());
  for (QWidget* c : inside) {
    const QRect r(c->mapTo(page->viewport(), QPoint(0, 0)), c->size());
    if (r.left() < 0 || r.right() >= page->viewport()->width())
      return QStringLiteral("%1 at x %2..%3 of a %4 px viewport")
          .arg(c->objectName().isEmpty() ? QString::fromLatin1(c->metaObject()->className()) : c->objectName())
          .arg(r.left())
          .arg(r.right())
          .arg(page->viewport()->width());
  }
  return QString();
}

}  // namespace cstest
