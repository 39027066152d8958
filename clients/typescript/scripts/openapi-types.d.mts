export const PACKAGE_ROOT: string;
export const REPO_ROOT: string;
export const GENERATED: string;
export function memreaderPython(): string;
export function memreaderEnv(): NodeJS.ProcessEnv;
export function openapiDocument(): Promise<Record<string, unknown>>;
export function typesSource(document: Record<string, unknown>): Promise<string>;
