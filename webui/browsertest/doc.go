// Package browsertest tests the web UI (package webui) in a real headless
// Chromium, driven with chromedp: the tests build the flotilla command,
// start `flotilla serve` and fake executors on loopback, open the UI's
// pages and check what a person sees, and stop every process they start
// by its PID.
//
// It is a module of its own so that the core module never links chromedp.
// The browser is $FLOTILLA_CHROMIUM, else /usr/bin/chromium, else chromium
// on PATH (scripts/chromium installs Debian's package when missing);
// without one the tests skip, and under CI=true they fail. With
// $FLOTILLA_UI_SCREENSHOTS set to a directory (docs/images for the
// README's pictures) each page's screenshot is written there; otherwise
// to the test's temporary directory.
package browsertest
