/**
 * Which models are embedding models, for the model lists: a model whose name
 * contains `embed` (any case), as every vendor names them
 * (`text-embedding-3-small`, `gemini-embedding-001`, `text-embedding-004`,
 * `nomic-embed-text`). The embedding routes serve any model a caller names;
 * this only decides what the lists say a model supports.
 *
 * @since 0.1.0
 */

const EMBEDDING_NAME = /embed/i

/**
 * Whether `model` is listed as an embedding model.
 *
 * @category models
 */
export const isEmbeddingModel = (model: string): boolean => EMBEDDING_NAME.test(model)
