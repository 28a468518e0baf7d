/**
 * Colours as people see them, for the tests: a CSS colour over its
 * background, as seen with normal vision or with red-green colour blindness
 * (Machado, Oliveira and Fernandes 2009, severity 1, applied in linear RGB),
 * how far apart two colours look (CIEDE2000 in CIELAB, D65), and WCAG's
 * contrast ratio.
 */

/** An sRGB colour, each channel 0 to 255. */
export type RGB = readonly [number, number, number];

/** The vision a colour is seen with. */
export type Vision = 'normal' | 'deuteranopia' | 'protanopia';

/** Machado et al.'s matrices for dichromats (severity 1.0), on linear RGB. */
const MACHADO: Record<Vision, number[][]> = {
  normal: [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1]
  ],
  deuteranopia: [
    [0.367322, 0.860646, -0.227968],
    [0.280085, 0.672501, 0.047413],
    [-0.01182, 0.04294, 0.968881]
  ],
  protanopia: [
    [0.152286, 1.052583, -0.204868],
    [0.114503, 0.786281, 0.099216],
    [-0.003882, -0.048116, 1.051998]
  ]
};

/** Linear RGB to CIE XYZ (sRGB primaries, D65 white). */
const TO_XYZ = [
  [0.4124564, 0.3575761, 0.1804375],
  [0.2126729, 0.7151522, 0.072175],
  [0.0193339, 0.119192, 0.9503041]
];

const apply = (m: number[][], v: readonly number[]) => m.map(row => row[0] * v[0] + row[1] * v[1] + row[2] * v[2]);

const linear = (rgb: RGB) => rgb.map(c => (c / 255 <= 0.04045 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4));

/** The colour of a computed CSS colour (`rgb()` or `rgba()`) drawn over an opaque `background`: the browser blends in sRGB. */
export function seenOver(css: string, background: RGB): RGB {
  const [r, g, b, a = 1] = css.match(/[\d.]+/g)!.map(Number);
  const blend = (c: number, i: number) => a * c + (1 - a) * background[i];
  return [blend(r, 0), blend(g, 1), blend(b, 2)];
}

/** An opaque computed CSS colour (a background) as RGB. */
export function rgbOf(css: string): RGB {
  return seenOver(css, [0, 0, 0]);
}

/** CIELAB (D65) of a colour as seen with `vision`; the simulation is clipped to the displayable range. */
export function labOf(rgb: RGB, vision: Vision = 'normal'): [number, number, number] {
  const simulated = apply(MACHADO[vision], linear(rgb)).map(c => Math.min(1, Math.max(0, c)));
  const white = apply(TO_XYZ, [1, 1, 1]);
  const [fx, fy, fz] = apply(TO_XYZ, simulated).map((v, i) => {
    const t = v / white[i];
    return t > (6 / 29) ** 3 ? Math.cbrt(t) : t / (3 * (6 / 29) ** 2) + 4 / 29;
  });
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

/** CIEDE2000 colour difference (Sharma, Wu and Dalal 2005); about 2 is just noticeable. */
export function deltaE2000([L1, a1, b1]: number[], [L2, a2, b2]: number[]): number {
  const rad = Math.PI / 180;
  const meanC = (Math.hypot(a1, b1) + Math.hypot(a2, b2)) / 2;
  const G = 0.5 * (1 - Math.sqrt(meanC ** 7 / (meanC ** 7 + 25 ** 7)));
  const [C1, C2] = [Math.hypot((1 + G) * a1, b1), Math.hypot((1 + G) * a2, b2)];
  const hue = (a: number, b: number) => (a === 0 && b === 0 ? 0 : (Math.atan2(b, (1 + G) * a) / rad + 360) % 360);
  const [h1, h2] = [hue(a1, b1), hue(a2, b2)];
  const dh = C1 * C2 === 0 ? 0 : Math.abs(h2 - h1) <= 180 ? h2 - h1 : h2 - h1 > 180 ? h2 - h1 - 360 : h2 - h1 + 360;
  const dH = 2 * Math.sqrt(C1 * C2) * Math.sin((dh / 2) * rad);
  const L = (L1 + L2) / 2;
  const C = (C1 + C2) / 2;
  const h =
    C1 * C2 === 0 ? h1 + h2 : Math.abs(h1 - h2) <= 180 ? (h1 + h2) / 2 : (h1 + h2 + (h1 + h2 < 360 ? 360 : -360)) / 2;
  const T =
    1 -
    0.17 * Math.cos((h - 30) * rad) +
    0.24 * Math.cos(2 * h * rad) +
    0.32 * Math.cos((3 * h + 6) * rad) -
    0.2 * Math.cos((4 * h - 63) * rad);
  const SL = 1 + (0.015 * (L - 50) ** 2) / Math.sqrt(20 + (L - 50) ** 2);
  const SC = 1 + 0.045 * C;
  const SH = 1 + 0.015 * C * T;
  const RT = -2 * Math.sqrt(C ** 7 / (C ** 7 + 25 ** 7)) * Math.sin(60 * Math.exp(-(((h - 275) / 25) ** 2)) * rad);
  const [dL, dC, dHs] = [(L2 - L1) / SL, (C2 - C1) / SC, dH / SH];
  return Math.sqrt(dL ** 2 + dC ** 2 + dHs ** 2 + RT * dC * dHs);
}

/** How far apart two colours look with `vision` (CIEDE2000). */
export function difference(x: RGB, y: RGB, vision: Vision = 'normal'): number {
  return deltaE2000(labOf(x, vision), labOf(y, vision));
}

/** WCAG 2 contrast ratio of two opaque colours, 1 to 21. */
export function contrastRatio(x: RGB, y: RGB): number {
  const luminance = (rgb: RGB) => apply(TO_XYZ, linear(rgb))[1];
  const [light, dark] = [luminance(x), luminance(y)].sort((p, q) => q - p);
  return (light + 0.05) / (dark + 0.05);
}
