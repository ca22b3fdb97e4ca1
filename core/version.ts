/** The tool's version, as `ttlstream --version` prints it and the HTML audit report records it. */
export const VERSION = '0.1.0';
