/* render_color.c — colours every picture uses.
 *
 * A site keeps its colour in every picture because the colour is a pure
 * function of its key: keys 1..20 take the twenty palette colours in order
 * (so a caller that numbers its sites by rank gets distinct colours for the
 * top twenty), larger keys (hashes) are mixed onto the palette and one of
 * three shades of it, and key 0, "other", is a quiet grey. The palette is
 * Tableau's, light enough for large areas and dark enough for thin bars. */
#include "render_common.h"

static const uint32_t palette[] = {
    0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2, 0xedc948, 0xb07aa1,
    0xff9da7, 0x9c755f, 0xa0cbe8, 0xffbe7d, 0x8cd17d, 0x499894, 0xd37295,
    0xb6992d, 0x6b6ecf, 0x17becf, 0xc49c94, 0xd4a6c8, 0x2f4b7c,
};
#define NPALETTE (sizeof palette / sizeof palette[0])
#define COLOR_OTHER 0xbab0ac

render_rgb rgb_hex(uint32_t hex) {
    render_rgb c = {((hex >> 16) & 0xff) / 255.0, ((hex >> 8) & 0xff) / 255.0,
                    (hex & 0xff) / 255.0};
    return c;
}

render_rgb rgb_mix(render_rgb a, render_rgb b, double t) {
    render_rgb c = {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
    return c;
}

void set_rgb(cairo_t *cr, render_rgb c, double alpha) {
    if (alpha >= 1)
        cairo_set_source_rgb(cr, c.r, c.g, c.b);
    else
        cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

render_rgb rgb_text_on(render_rgb bg) {
    double lum = 0.2126 * bg.r + 0.7152 * bg.g + 0.0722 * bg.b;
    return rgb_hex(lum > 0.55 ? COLOR_TEXT : 0xffffff);
}

render_rgb render_site_color(uint64_t key) {
    if (key == 0)
        return rgb_hex(COLOR_OTHER);
    if (key & RENDER_COLOR_KEY(0))
        return rgb_hex((uint32_t)(key & 0xFFFFFFULL));
    if (key <= NPALETTE)
        return rgb_hex(palette[key - 1]);
    /* splitmix64's finalizer: neighbouring hashes land far apart */
    uint64_t h = key;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    render_rgb base = rgb_hex(palette[h % NPALETTE]);
    switch ((h / NPALETTE) % 3) {
    case 1:
        return rgb_mix(base, rgb_hex(0x000000), 0.25);
    case 2:
        return rgb_mix(base, rgb_hex(0xffffff), 0.35);
    default:
        return base;
    }
}
