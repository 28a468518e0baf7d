/**
 * The extension's public contract: ids that tests, tools and other
 * extensions may rely on.
 */

/** The npm package name, the prefix of every plugin id. */
export const PACKAGE_NAME = 'jupyterlab-cuda-memdiff';

/** Id of the plugin whose schema (schema/plugin.json) holds every setting. */
export const SETTINGS_ID = `${PACKAGE_NAME}:plugin`;

/** Command ids, `cuda-memdiff:<verb-noun>`. */
export namespace CommandIDs {
  /** Open (and reveal) the snapshot diff side panel. */
  export const openPanel = 'cuda-memdiff:open-panel';
}

/** DOM id of the side panel, a stable hook for tests. */
export const PANEL_ID = 'cuda-memdiff-panel';
