package simreport

import (
	"image/color"
	"io"
	"math"
	"os"

	"gonum.org/v1/plot/plotter"
)

// okabeIto is Okabe and Ito's palette of eight colours told apart with
// every common colour-vision deficiency (black last: it reads as the
// grid's ink).
var okabeIto = []color.RGBA{
	{0xE6, 0x9F, 0x00, 0xFF}, // orange
	{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	{0xF0, 0xE4, 0x42, 0xFF}, // yellow
	{0x00, 0x72, 0xB2, 0xFF}, // blue
	{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	{0x00, 0x00, 0x00, 0xFF}, // black
}

// queueColour is the colour of the i-th queue (or resource, or group):
// Okabe and Ito's palette for the first eight, then hues spread by the
// golden angle, so that every queue of a run has a colour of its own.
// Past eight, the plots also tell queues apart by dash or point shape.
func queueColour(i int) color.Color {
	if i < len(okabeIto) {
		return okabeIto[i]
	}
	h := math.Mod(float64(i-len(okabeIto))*137.508, 360)
	return hsv(h, 0.75, 0.8)
}

// hsv converts a hue (degrees), saturation and value to a colour.
func hsv(h, s, v float64) color.RGBA {
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	byteOf := func(f float64) uint8 { return uint8(math.Round((f + m) * 255)) }
	return color.RGBA{byteOf(r), byteOf(g), byteOf(b), 0xFF}
}

// nonZero keeps the points of xys whose Y is not 0: a per-cycle count
// drawn as points shows the cycles where something happened, not a line
// along the axis.
func nonZero(xys plotter.XYs) plotter.XYs {
	var out plotter.XYs
	for _, p := range xys {
		if p.Y != 0 {
			out = append(out, p)
		}
	}
	return out
}

// IsTerminal reports whether w is a terminal (a character device), where a
// progress line rewritten with carriage returns reads as one line; in a
// file or a pipe (a log) it would be a line of \r-joined updates.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
