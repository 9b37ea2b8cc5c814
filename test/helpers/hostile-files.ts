import zlib from 'node:zlib';

// Small files that once stalled the service (issue 24): each costs a parser far more than its size.

/** HTML of `n` nested <div>s around one paragraph (2.2 MB at n = 130,000). */
export function nestedDivs(n: number): Buffer {
  return Buffer.from(`<html><body>${'<div>'.repeat(n)}<p>x</p>${'</div>'.repeat(n)}</body></html>`);
}

/**
 * A one-page PDF whose content stream inflates to `mib` MiB (spaces after one line of text) while
 * the file stays a few hundred KB: a Flate bomb.
 */
export function flateBombPdf(mib: number): Buffer {
  const spaces = Buffer.alloc(1_048_576, 0x20);
  const text = Buffer.from('BT /F1 12 Tf 72 720 Td (A page of nothing much) Tj ET\n');
  const deflated = zlib.deflateSync(Buffer.concat([text, ...Array.from({ length: mib }, () => spaces)]), { level: 9 });
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    null, // the content stream
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let at = parts[0]!.length;
  objects.forEach((o, i) => {
    offsets.push(at);
    const piece = o === null
      ? Buffer.concat([Buffer.from(`${i + 1} 0 obj\n<< /Length ${deflated.length} /Filter /FlateDecode >>\nstream\n`), deflated, Buffer.from('\nendstream\nendobj\n')])
      : Buffer.from(`${i + 1} 0 obj\n${o}\nendobj\n`);
    parts.push(piece);
    at += piece.length;
  });
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  parts.push(Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`));
  return Buffer.concat(parts);
}

/**
 * JSON whose every value repeats a long key path: `depth` levels of `keyChars`-character keys above an
 * array of `values` numbers (about 64 KB as built by default). Stored naively, each value carried the
 * whole path: over a hundred MB of text.
 */
export function keyPathBomb(depth = 40, keyChars = 1500, values = 2000): Buffer {
  let inner: unknown = Array.from({ length: values }, (_, i) => i % 10);
  for (let d = depth; d > 0; d--) inner = { [`K${d}`.padEnd(keyChars, 'x')]: inner };
  return Buffer.from(JSON.stringify(inner));
}
