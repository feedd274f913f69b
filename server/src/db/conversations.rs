//! Conversations and their transcript: every message, in order.

use sqlx::FromRow;
use widget::wire::{DisplayCard, Role};

use super::pool::Pool;
use crate::ids::{new_id, now_ms};

#[derive(Debug, Clone, FromRow)]
pub struct ConversationRow {
    pub id: String,
    pub workspace_id: String,
    pub external_user_id: String,
    pub title: String,
    pub updated_at: i64,
    /// The language a turn request last named (see [`reads`]).
    pub lang: Option<String>,
}

#[derive(Debug, Clone, FromRow)]
pub struct MessageRow {
    pub id: String,
    pub seq: i64,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub content: String,
    pub tool_calls: Option<String>,
    pub tool_call_id: Option<String>,
    pub cards: Option<String>,
    pub created_at: i64,
    /// The sources a reply cites (JSON `[{url, title, section}]`).
    pub sources: Option<String>,
}

/// Marks a conversation as an assistant test run's: it is not listed
/// with the visitors'.
pub async fn mark_test_conversation(pool: &Pool, id: &str, run_id: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE conversations SET test_run_id = $1 WHERE id = $2").bind(run_id).bind(id).execute(pool).await?;
    Ok(())
}

pub async fn create_conversation(
    pool: &Pool,
    workspace_id: &str,
    external_user_id: &str,
    title: &str,
    lang: Option<&str>,
) -> anyhow::Result<String> {
    let id = new_id("conv");
    let now = now_ms();
    sqlx::query(
        "INSERT INTO conversations (id, workspace_id, external_user_id, title, created_at, updated_at, lang)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&id)
    .bind(workspace_id)
    .bind(external_user_id)
    .bind(title)
    .bind(now)
    .bind(now)
    .bind(lang)
    .execute(pool)
    .await?;
    Ok(id)
}

/// Starts a conversation with its first turn (`turn_id`) running and the
/// user's first message (`text`) in its transcript, in one write: a new
/// conversation has no other turn to wait for. Returns its id and the
/// message's.
pub async fn create_conversation_with_turn(
    pool: &Pool,
    workspace_id: &str,
    external_user_id: &str,
    title: &str,
    lang: Option<&str>,
    turn_id: &str,
    text: &str,
) -> anyhow::Result<(String, String)> {
    const POSTGRES: &str = "WITH conversation AS (
           INSERT INTO conversations (id, workspace_id, external_user_id, title, created_at, updated_at, lang)
           VALUES ($1, $2, $3, $4, $5, $5, $6)),
         turn AS (INSERT INTO turns (id, conversation_id, started_at) VALUES ($7, $1, $5))
         INSERT INTO messages (id, conversation_id, seq, role, content, created_at) VALUES ($8, $1, 1, 'user', $9, $5)";
    const SQLITE: &str =
        "INSERT INTO conversations (id, workspace_id, external_user_id, title, created_at, updated_at, lang)
         VALUES ($1, $2, $3, $4, $5, $5, $6);
         INSERT INTO turns (id, conversation_id, started_at) VALUES ($7, $1, $5);
         INSERT INTO messages (id, conversation_id, seq, role, content, created_at) VALUES ($8, $1, 1, 'user', $9, $5)";
    let (id, message_id) = (new_id("conv"), new_id("msg"));
    let query = sqlx::query(if pool.is_postgres() { POSTGRES } else { SQLITE });
    let query = query.bind(&id).bind(workspace_id).bind(external_user_id).bind(title).bind(now_ms()).bind(lang);
    pool.write_together(query.bind(turn_id).bind(&message_id).bind(text)).await?;
    Ok((id, message_id))
}

/// A later turn of a conversation, as [`continue_conversation`] left it.
#[derive(Debug)]
pub enum Continued {
    /// The turn is claimed and the conversation touched: the language it
    /// is read in from now on, and the user's message's id, unless an
    /// action waited for an answer (the message goes after the answers).
    Claimed { lang: Option<String>, message_id: Option<String> },
    /// Nothing written: the conversation is not this user's, or a turn of
    /// it is running (or was left running by a process that died).
    NotClaimed,
}

/// Claims the user's conversation `id` for a later turn (`turn_id`),
/// touches it, keeps the language this request names (`lang`) and, when
/// no action waits for the user's answer, appends their message (`text`):
/// in one write (issue #47: a turn of a conversation was four calls
/// before its first model step). Nothing is written unless the turn is
/// claimed.
pub async fn continue_conversation(
    pool: &Pool,
    id: &str,
    workspace_id: &str,
    external_user_id: &str,
    lang: Option<&str>,
    turn_id: &str,
    text: &str,
) -> anyhow::Result<Continued> {
    use sqlx::Row;
    // An aggregate over no rows is still a row: the message's condition is
    // on the row that carries its number.
    const MESSAGE: &str = "INSERT INTO messages (id, conversation_id, seq, role, content, created_at)
         SELECT $7, $3, n.seq, 'user', $8, $2
         FROM (SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM messages WHERE conversation_id = $3) n
         WHERE EXISTS (SELECT 1 FROM turns WHERE id = $1)
           AND NOT EXISTS (SELECT 1 FROM actions WHERE conversation_id = $3
                           AND status IN ('pending', 'confirmed_once') AND app_component_id IS NULL)";
    const CLAIM: &str = "INSERT INTO turns (id, conversation_id, started_at)
         SELECT $1, id, $2 FROM conversations WHERE id = $3 AND workspace_id = $4 AND external_user_id = $5
         ON CONFLICT (conversation_id) WHERE finished_at IS NULL DO NOTHING";
    let sql = if pool.is_postgres() {
        // The statement's parts see the tables as they were before it: the
        // claim is seen through its own RETURNING.
        format!(
            "WITH claimed AS ({CLAIM} RETURNING conversation_id),
             touched AS (UPDATE conversations SET updated_at = $2, lang = COALESCE($6, lang)
                         WHERE id IN (SELECT conversation_id FROM claimed) RETURNING lang),
             said AS ({} RETURNING id)
             SELECT 'lang' AS kind, lang AS value FROM touched UNION ALL SELECT 'message', id FROM said",
            MESSAGE.replace("EXISTS (SELECT 1 FROM turns WHERE id = $1)", "EXISTS (SELECT 1 FROM claimed)")
        )
    } else {
        format!(
            "{CLAIM};
             UPDATE conversations SET updated_at = $2, lang = COALESCE($6, lang)
             WHERE id = $3 AND EXISTS (SELECT 1 FROM turns WHERE id = $1) RETURNING 'lang' AS kind, lang AS value;
             {MESSAGE} RETURNING 'message' AS kind, id AS value"
        )
    };
    let message_id = new_id("msg");
    let query = sqlx::query(&sql).bind(turn_id).bind(now_ms()).bind(id).bind(workspace_id).bind(external_user_id);
    let rows = pool.write_together(query.bind(lang).bind(&message_id).bind(text)).await?;
    let (mut claimed, mut kept_lang, mut said) = (false, None, None);
    for row in rows {
        let kind: String = row.try_get(0)?;
        let value: Option<String> = row.try_get(1)?;
        match kind.as_str() {
            "lang" => (claimed, kept_lang) = (true, value),
            _ => said = value,
        }
    }
    Ok(match claimed {
        true => Continued::Claimed { lang: kept_lang, message_id: said },
        false => Continued::NotClaimed,
    })
}

/// Keeps the language the conversation's user reads.
pub async fn set_conversation_lang(pool: &Pool, id: &str, lang: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE conversations SET lang = $1 WHERE id = $2 AND (lang IS NULL OR lang <> $1)")
        .bind(lang)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// The language the conversation's user reads: the last one a turn
/// request named, else English.
pub async fn conversation_lang(pool: &Pool, id: &str) -> anyhow::Result<&'static str> {
    let lang: Option<Option<String>> =
        sqlx::query_scalar("SELECT lang FROM conversations WHERE id = $1").bind(id).fetch_optional(pool).await?;
    Ok(reads(lang.flatten().as_deref()))
}

/// The language a conversation's stored `lang` stands for, else English.
pub fn reads(stored: Option<&str>) -> &'static str {
    stored.and_then(widget::wire::i18n::spoken).unwrap_or(widget::wire::i18n::LANGUAGES[0])
}

const CONVERSATION_COLUMNS: &str = "id, workspace_id, external_user_id, title, updated_at, lang";

/// The conversation, only if it belongs to this workspace and user.
pub async fn owned_conversation(
    pool: &Pool,
    id: &str,
    workspace_id: &str,
    external_user_id: &str,
) -> anyhow::Result<Option<ConversationRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {CONVERSATION_COLUMNS} FROM conversations
         WHERE id = $1 AND workspace_id = $2 AND external_user_id = $3"
    ))
    .bind(id)
    .bind(workspace_id)
    .bind(external_user_id)
    .fetch_optional(pool)
    .await?)
}

pub async fn list_conversations(
    pool: &Pool,
    workspace_id: &str,
    external_user_id: &str,
) -> anyhow::Result<Vec<ConversationRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {CONVERSATION_COLUMNS} FROM conversations
         WHERE workspace_id = $1 AND external_user_id = $2 ORDER BY updated_at DESC LIMIT 100"
    ))
    .bind(workspace_id)
    .bind(external_user_id)
    .fetch_all(pool)
    .await?)
}

pub async fn messages(pool: &Pool, conversation_id: &str) -> anyhow::Result<Vec<MessageRow>> {
    Ok(sqlx::query_as(
        "SELECT id, seq, role, content, tool_calls, tool_call_id, cards, created_at, sources FROM messages
         WHERE conversation_id = $1 ORDER BY seq",
    )
    .bind(conversation_id)
    .fetch_all(pool)
    .await?)
}

/// What a turn reads of its conversation before its first model step.
#[derive(Debug, Default)]
pub struct ForTurn {
    pub messages: Vec<MessageRow>,
    /// What the conversation's apps last told the model.
    pub app_context: Option<String>,
    /// Whether any of its messages carries an attachment (they are read
    /// on their own, `attachments::sent`, only then).
    pub attached: bool,
}

/// A conversation's transcript, what its apps told the model and whether
/// anything was attached to it, in one read (issue #47: one call for
/// what were three a later turn; most conversations attach nothing).
pub async fn for_turn(pool: &Pool, conversation_id: &str) -> anyhow::Result<ForTurn> {
    use sqlx::Row;
    let rows = sqlx::query(
        "SELECT id, seq, role, content, tool_calls, tool_call_id, cards, created_at, sources,
           (SELECT model_context FROM app_states WHERE conversation_id = $1) AS app_context,
           CAST(CASE WHEN EXISTS (SELECT 1 FROM message_attachments l JOIN messages n ON n.id = l.message_id
                                  WHERE n.conversation_id = $1) THEN 1 ELSE 0 END AS BIGINT) AS attached
         FROM messages WHERE conversation_id = $1 ORDER BY seq",
    )
    .bind(conversation_id)
    .fetch_all(pool)
    .await?;
    let Some(first) = rows.first() else { return Ok(ForTurn::default()) };
    let app_context: Option<String> = first.try_get("app_context")?;
    let attached: i64 = first.try_get("attached")?;
    let messages = rows.iter().map(MessageRow::from_row).collect::<Result<_, sqlx::Error>>()?;
    Ok(ForTurn { messages, app_context, attached: attached != 0 })
}

/// A message to append to a conversation's transcript.
#[derive(Debug, Clone)]
pub struct NewMessage<'a> {
    role: Role,
    content: &'a str,
    tool_calls: Option<String>,
    tool_call_id: Option<&'a str>,
    cards: Option<String>,
    sources: Option<String>,
}

impl<'a> NewMessage<'a> {
    /// A user's message, or an assistant's text.
    pub fn new(role: Role, content: &'a str) -> Self {
        Self { role, content, tool_calls: None, tool_call_id: None, cards: None, sources: None }
    }

    /// The sources a reply cites.
    pub fn with_sources(mut self, sources: &[widget::wire::CitedSource]) -> Self {
        self.sources = (!sources.is_empty()).then(|| serde_json::to_string(sources).expect("sources serialize"));
        self
    }

    /// The model's tool calls of this step (JSON), saved with its text.
    pub fn with_tool_calls(mut self, calls_json: String) -> Self {
        self.tool_calls = Some(calls_json);
        self
    }

    /// The answer to tool call `call_id`, with the cards the user was shown.
    pub fn tool_result(call_id: &'a str, content: &'a str, cards: &[DisplayCard]) -> Self {
        let cards = (!cards.is_empty()).then(|| serde_json::to_string(cards).expect("cards serialize"));
        Self { role: Role::Tool, content, tool_calls: None, tool_call_id: Some(call_id), cards, sources: None }
    }
}

/// The statement that appends a message (`$1`–`$9`, bound by
/// [`bind_message`]) at the end of its conversation's transcript.
macro_rules! insert_message {
    () => {
        "INSERT INTO messages (id, conversation_id, seq, role, content, tool_calls, tool_call_id, cards, created_at,
           sources)
         SELECT $1, $2, COALESCE(MAX(seq), 0) + 1, $3, $4, $5, $6, $7, $8, $9 FROM messages WHERE conversation_id = $2"
    };
}

/// Binds `insert_message!`'s parameters: the message `m` with its new
/// `id`, written at `now`.
pub(super) fn bind_message<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    id: &'q str,
    conversation_id: &'q str,
    m: NewMessage<'q>,
    now: i64,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(id)
        .bind(conversation_id)
        .bind(m.role.as_str())
        .bind(m.content)
        .bind(m.tool_calls)
        .bind(m.tool_call_id)
        .bind(m.cards)
        .bind(now)
        .bind(m.sources)
}

/// A tool's result its turn holds, to be written with the turn's next
/// write (issue #47: a tool step is one call to the database, not two):
/// the next step's message, or the turn's end. Its id is made now, for
/// what is shown with it before it is saved.
#[derive(Debug, Clone)]
pub struct HeldResult {
    pub id: String,
    call_id: String,
    content: String,
    cards: Option<String>,
    at: i64,
}

impl HeldResult {
    /// The answer to tool call `call_id`, with the cards the user was shown.
    pub fn new(call_id: &str, content: &str, cards: &[DisplayCard]) -> Self {
        let cards = NewMessage::tool_result(call_id, content, cards).cards;
        Self { id: new_id("msg"), call_id: call_id.to_owned(), content: content.to_owned(), cards, at: now_ms() }
    }
}

/// The statements that append `count` held results to the transcript
/// before what the same write appends after them: each with five
/// parameters from `$first` (id, content, call id, cards, time), the
/// conversation being `$conversation`. On PostgreSQL the statements of one
/// write all see the transcript as it was before it (data-modifying
/// `WITH`s), so the k-th takes the k-th number after the last; on SQLite
/// each sees the one before it.
pub(super) fn held_inserts(count: usize, conversation: usize, first: usize, postgres: bool) -> Vec<String> {
    (0..count)
        .map(|k| {
            let p = first + 5 * k;
            let plus = if postgres { k + 1 } else { 1 };
            format!(
                "INSERT INTO messages (id, conversation_id, seq, role, content, tool_calls, tool_call_id, cards,
                   created_at, sources)
                 SELECT ${p}, ${conversation}, COALESCE(MAX(seq), 0) + {plus}, '{role}', ${}, NULL, ${}, ${}, ${}, NULL
                 FROM messages WHERE conversation_id = ${conversation}",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                role = Role::Tool.as_str(),
            )
        })
        .collect()
}

/// Binds [`held_inserts`]'s parameters, in order.
pub(super) fn bind_held<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    held: &'q [HeldResult],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for h in held {
        query = query.bind(&h.id).bind(&h.content).bind(&h.call_id).bind(h.cards.as_deref()).bind(h.at);
    }
    query
}

/// `insert_message!()` for a message that follows `held` results written
/// in the same call (see [`held_inserts`]).
pub(super) fn insert_message_after(held: usize, postgres: bool) -> String {
    const NEXT: &str = "COALESCE(MAX(seq), 0) + 1";
    debug_assert!(insert_message!().contains(NEXT));
    let plus = if postgres { held + 1 } else { 1 };
    insert_message!().replacen(NEXT, &format!("COALESCE(MAX(seq), 0) + {plus}"), 1)
}

/// Statements that go together as one write ([`Pool::write_together`]):
/// on PostgreSQL the last one with the others as its data-modifying
/// `WITH`s, on SQLite one after the other (`write_together` runs them in
/// one transaction).
pub(super) fn together(statements: &[String], postgres: bool) -> String {
    let (last, before) = statements.split_last().expect("a write has a statement");
    if postgres {
        if before.is_empty() {
            return last.clone();
        }
        let with: Vec<String> = before.iter().enumerate().map(|(i, s)| format!("w{i} AS ({s})")).collect();
        format!("WITH {} {last}", with.join(", "))
    } else {
        statements.join("; ")
    }
}

/// Appends the held results and then `then`, if any, in one write;
/// returns `then`'s id.
pub async fn append_held(
    pool: &Pool,
    conversation_id: &str,
    held: &[HeldResult],
    then: Option<NewMessage<'_>>,
) -> anyhow::Result<Option<String>> {
    let postgres = pool.is_postgres();
    let Some(m) = then else {
        if held.is_empty() {
            return Ok(None);
        }
        let sql = together(&held_inserts(held.len(), 1, 2, postgres), postgres);
        pool.write_together(bind_held(sqlx::query(&sql).bind(conversation_id), held)).await?;
        return Ok(None);
    };
    if held.is_empty() {
        return append_message(pool, conversation_id, m).await.map(Some);
    }
    let mut statements = held_inserts(held.len(), 2, 10, postgres);
    statements.push(insert_message_after(held.len(), postgres));
    let sql = together(&statements, postgres);
    let id = new_id("msg");
    let query = bind_message(sqlx::query(&sql), &id, conversation_id, m, now_ms());
    pool.write_together(bind_held(query, held)).await?;
    Ok(Some(id))
}

/// Appends a message at the end of the transcript; returns its id. One
/// statement (atomic on its own): the hot path of every turn.
pub async fn append_message(pool: &Pool, conversation_id: &str, m: NewMessage<'_>) -> anyhow::Result<String> {
    let id = new_id("msg");
    bind_message(sqlx::query(insert_message!()), &id, conversation_id, m, now_ms()).execute(pool).await?;
    Ok(id)
}

/// Which of a workspace's conversations to list (the host's view).
#[derive(Debug, Default, Clone)]
pub struct ConversationFilter {
    pub user: Option<String>,
    /// Active at or after (ms).
    pub since: Option<i64>,
    /// Active before (ms).
    pub until: Option<i64>,
    /// After this (updated_at, id): the cursor of the page before.
    pub after: Option<(i64, String)>,
}

/// A workspace's conversations, most recently active first.
pub async fn workspace_conversations(
    pool: &Pool,
    workspace_id: &str,
    filter: &ConversationFilter,
    limit: i64,
) -> anyhow::Result<Vec<ConversationRow>> {
    let (after_at, after_id) = filter.after.clone().unzip();
    Ok(sqlx::query_as(&format!(
        "SELECT {CONVERSATION_COLUMNS} FROM conversations
         WHERE workspace_id = $1 AND test_run_id IS NULL AND ($2 IS NULL OR external_user_id = $2)
           AND ($3 IS NULL OR updated_at >= $3) AND ($4 IS NULL OR updated_at < $4)
           AND ($5 IS NULL OR updated_at < $5 OR (updated_at = $5 AND id < $6))
         ORDER BY updated_at DESC, id DESC LIMIT $7"
    ))
    .bind(workspace_id)
    .bind(filter.user.as_deref())
    .bind(filter.since)
    .bind(filter.until)
    .bind(after_at)
    .bind(after_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// One of the workspace's conversations, whoever's it is.
pub async fn workspace_conversation(
    pool: &Pool,
    workspace_id: &str,
    id: &str,
) -> anyhow::Result<Option<ConversationRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {CONVERSATION_COLUMNS} FROM conversations
         WHERE id = $1 AND workspace_id = $2"
    ))
    .bind(id)
    .bind(workspace_id)
    .fetch_optional(pool)
    .await?)
}
