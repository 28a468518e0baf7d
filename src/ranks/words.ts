/**
 * The ranks view's findings in words, through the translator: whole
 * sentences with placeholders, from the engine's data.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { formatBytes } from '../engine';
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
  switch (v.code) {
    case 'too-few-steps':
      return trans.__('Fewer than two optimizer steps were captured on each rank: there is no growth to measure yet.');
    case 'all-flat':
      return trans.__('Every rank is flat from step to step.');
    case 'all-grow':
      return [trans.__('Every rank grows.'), ...v.growing.map(r => growthSentence(summary, r, trans))].join(' ');
    case 'rank-grows':
      return [
        ...v.growing.map(r => growthSentence(summary, r, trans)),
        trans._n('Rank %2 is flat.', 'Ranks %2 are flat.', v.flat.length, v.flat.join(', '))
      ].join(' ');
  }
}
