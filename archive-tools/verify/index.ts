export { verifyArchive, type VerifyOptions, type VerifyReport } from './verify';
export { checkChain, checkFile, coveredByLoss, type Finding, type FindingKind } from './check';
