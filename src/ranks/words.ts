/**
 * The ranks view's findings in words, through the translator: whole
 * sentences with placeholders, from the engine's data.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { formatBytes, formatRankRanges, rankCount } from '../engine';
import { IRanksSummary, ISiteSummary } from '../worker/ranks';

/** `file.py:40 fn`, with the folders left out; the full path is in the title. */
export function siteText(site: ISiteSummary, trans: TranslationBundle): string {
  if (!site.filename) {
    return trans.__('(no Python stack)');
  }
  const file = site.filename.split('/').pop();
  return `${file}:${site.line} ${site.name}`;
}

function growthSentence(summary: IRanksSummary, rank: number, trans: TranslationBundle): string {
  const g = summary.ranks.find(r => r.rank === rank)!.growth;
  const top = g.sites[0];
  return top
    ? trans.__('Rank %1 grows %2 per step, from %3.', rank, formatBytes(g.bytesPerStep), siteText(top, trans))
    : trans.__('Rank %1 grows %2 per step.', rank, formatBytes(g.bytesPerStep));
}

/** What the ranks' growth says, in sentences. */
export function verdictText(summary: IRanksSummary, trans: TranslationBundle): string {
  const v = summary.verdict;
  if (v.code === 'too-few-steps') {
    return trans.__('Fewer than two optimizer steps were captured on each rank: there is no growth to measure yet.');
  }
  // "Every rank" would include ranks with too few steps to tell.
  const some = v.unmeasured.length > 0;
  const unmeasured = some
    ? [
        trans._n(
          'Rank %2 has fewer than two optimizer-step capture points: too few steps to tell.',
          'Ranks %2 have fewer than two optimizer-step capture points: too few steps to tell.',
          v.unmeasured.length,
          v.unmeasured.join(', ')
        )
      ]
    : [];
  switch (v.code) {
    case 'all-flat': {
      const flat = summary.ranks.map(r => r.rank).filter(r => !v.unmeasured.includes(r));
      return [
        some
          ? trans._n(
              'Rank %2 is flat from step to step.',
              'Ranks %2 are flat from step to step.',
              flat.length,
              flat.join(', ')
            )
          : trans.__('Every rank is flat from step to step.'),
        ...unmeasured
      ].join(' ');
    }
    case 'all-grow':
      return [
        some ? trans.__('Every rank measured grows.') : trans.__('Every rank grows.'),
        ...v.growing.map(r => growthSentence(summary, r, trans)),
        ...unmeasured
      ].join(' ');
    case 'rank-grows':
      return [
        ...v.growing.map(r => growthSentence(summary, r, trans)),
        trans._n('Rank %2 is flat.', 'Ranks %2 are flat.', v.flat.length, v.flat.join(', ')),
        ...unmeasured
      ].join(' ');
  }
}

/** The ranks the world size promises that have no folder, as runs ("ranks 2-999,999"); null when none. */
export function missingText(summary: IRanksSummary, trans: TranslationBundle): string | null {
  if (summary.missing.length === 0) {
    return null;
  }
  return trans._n(
    'No folder for rank %2: its capture did not reach this folder.',
    'No folder for ranks %2: their captures did not reach this folder.',
    rankCount(summary.missing),
    formatRankRanges(summary.missing)
  );
}
