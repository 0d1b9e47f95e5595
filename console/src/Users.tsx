/**
 * Users, for admins (`/api/user/`): search by name, each user's role, group,
 * balance, budgets and status; add a user; change a user's role, group and
 * budgets (USD per day, week, month or in total; each key's budgets apply
 * within them); enable or
 * disable, and top up the balance in USD (each top-up one ledger entry,
 * `POST /api/user/topup`). The API decides who may change whom (an admin
 * manages users, root manages admins too) and says why it refuses. The list
 * is paged, searched (username, display name, e-mail), filtered (role,
 * status, group) and sorted on the server, its view kept in the hash's query.
 */
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { unitsOf, usd } from "./money.ts"
import { BudgetFields, budgetsOf, type BudgetSpec, type BudgetTexts, budgetTextsOf } from "./Budgets.tsx"
import { apiQuery, useHashView } from "./hashQuery.ts"
import { SortHeader } from "./listControls.tsx"
import { KEYS, LIST, USERS } from "./strings.ts"
import { ErrorText, Field, Pager, timeText } from "./ui.tsx"

/** A user as the admin API lists it. */
interface User {
  readonly id: number
  readonly username: string
  readonly role: string
  readonly group: string
  readonly quota: number
  readonly used_quota: number
  readonly status: "enabled" | "disabled"
  /** The user's budgets with this period's spend (USD) and reset (epoch seconds); `null` or absent: none. */
  readonly budgets?: ReadonlyArray<BudgetSpec & { readonly spent: number; readonly resets_at: number | null }> | null
}

/** Each budget as "$0.40 of $5 per day, resets …", or "none". */
const budgetsText = (budgets: User["budgets"]): string =>
  budgets === null || budgets === undefined || budgets.length === 0
    ? USERS.none
    : budgets.map((budget) =>
      KEYS.budget(budget.spent.toFixed(2), budget.amount, budget.period) +
      (budget.resets_at === null ? "" : KEYS.resets(timeText(budget.resets_at)))
    ).join("; ")

/** The form that adds a user (`POST /api/user/`). */
const CreateUser = (props: { onCreated: (username: string) => void }) => {
  const [username, setUsername] = useState("")
  const [password, setPassword] = useState("")
  const [group, setGroup] = useState("default")
  const [role, setRole] = useState("user")
  const [error, setError] = useState<string | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    try {
      await api("POST", "/api/user/", { username, password, group, role })
      setUsername("")
      setPassword("")
      props.onCreated(username)
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <form class="panel" onSubmit={submit} aria-label={USERS.add}>
      <h2>{USERS.add}</h2>
      <Field label={USERS.newUsername}>
        <input name="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
      </Field>
      <Field label={USERS.newPassword}>
        <input
          name="password"
          type="password"
          autocomplete="new-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
      </Field>
      <Field label={USERS.newGroup}>
        <input name="group" required value={group} onInput={(e) => setGroup(e.currentTarget.value)} />
      </Field>
      <Field label={USERS.newRole}>
        <select name="role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
          <option value="user">user</option>
          <option value="admin">admin</option>
        </select>
      </Field>
      <ErrorText error={error} />
      <button type="submit">{USERS.addButton}</button>
    </form>
  )
}

/** A user's role and group, changed (`PUT /api/user/`). */
const EditUser = (props: { item: User; onDone: (changed: boolean) => void }) => {
  const { item } = props
  const [role, setRole] = useState(item.role)
  const [group, setGroup] = useState(item.group)
  const [budgets, setBudgets] = useState<BudgetTexts>(budgetTextsOf(item.budgets))
  const [error, setError] = useState<string | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    const typedBudgets = budgetsOf(budgets)
    if (typeof typedBudgets === "string") return setError(typedBudgets)
    try {
      await api("PUT", "/api/user/", { id: item.id, role, group, budgets: typedBudgets })
      props.onDone(true)
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  return (
    <form onSubmit={submit} aria-label={USERS.edit(item.username)}>
      <Field label={USERS.roleOf(item.username)}>
        <select value={role} onChange={(e) => setRole(e.currentTarget.value)}>
          <option value="user">user</option>
          <option value="admin">admin</option>
        </select>
      </Field>
      <Field label={USERS.groupOf(item.username)}>
        <input value={group} required onInput={(e) => setGroup(e.currentTarget.value)} />
      </Field>
      <BudgetFields owner={item.username} value={budgets} onInput={setBudgets} />
      <ErrorText error={error} />
      <button type="submit">{USERS.save}</button>{" "}
      <button type="button" onClick={() => props.onDone(false)}>{USERS.cancel}</button>
    </form>
  )
}

/** One user's row with edit, enable/disable and a top-up form. */
const UserRow = (props: { item: User; onChanged: () => void }) => {
  const { item } = props
  const [editing, setEditing] = useState(false)
  const [amount, setAmount] = useState("")
  const [error, setError] = useState<string | null>(null)
  const run = async (path: string, method: string, body: unknown) => {
    setError(null)
    try {
      await api(method, path, body)
      setAmount("")
      props.onChanged()
    } catch (caught) {
      setError(wordsOf(caught))
    }
  }
  const topUp = (event: Event) => {
    event.preventDefault()
    const units = unitsOf(amount)
    if (units === undefined || units === 0) return setError(USERS.amountUsd)
    return run("/api/user/topup", "POST", { id: item.id, amount: units })
  }
  return (
    <tr>
      <td>{item.username}</td>
      <td data-testid="user-role">{item.role}</td>
      <td data-testid="user-group">{item.group}</td>
      <td data-testid="user-balance">{usd(item.quota)}</td>
      <td>{usd(item.used_quota)}</td>
      <td data-testid="user-budgets">{budgetsText(item.budgets)}</td>
      <td>{item.status}</td>
      <td>
        {editing && (
          <EditUser
            item={item}
            onDone={(changed) => {
              setEditing(false)
              if (changed) props.onChanged()
            }}
          />
        )}
        {item.role !== "root" && !editing && (
          <button
            type="button"
            aria-label={USERS.named(USERS.editShort, item.username)}
            onClick={() => setEditing(true)}
          >
            {USERS.editShort}
          </button>
        )} {item.role !== "root" && (
          <button
            type="button"
            aria-label={USERS.named(item.status === "enabled" ? USERS.disable : USERS.enable, item.username)}
            onClick={() =>
              run("/api/user/", "PUT", { id: item.id, status: item.status === "enabled" ? "disabled" : "enabled" })}
          >
            {item.status === "enabled" ? USERS.disable : USERS.enable}
          </button>
        )}
        <form class="inline" onSubmit={topUp} aria-label={USERS.topUpOf(item.username)}>
          <Field label={USERS.topUpField(item.username)}>
            <input inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
          </Field>
          <button type="submit">{USERS.topUp}</button>
        </form>
        <ErrorText error={error} />
      </td>
    </tr>
  )
}

/** The list's view, as the hash's query and the API's parameters hold it (newest first by default). */
const VIEW = { keyword: "", role: "", status: "", group: "", sort: "id", order: "desc", page: "1" }

/** The users page. */
export const Users = () => {
  const [view, change] = useHashView(VIEW)
  const [draft, setDraft] = useState(view)
  const [listing, setListing] = useState<Page<User> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [created, setCreated] = useState<string | null>(null)
  const load = () =>
    api<Page<User>>("GET", `/api/user/?${apiQuery(view)}&page_size=20`).then(
      (page) => {
        setError(null)
        setListing(page)
      },
      (caught) => setError(wordsOf(caught))
    )
  useEffect(() => {
    load()
  }, [apiQuery(view)])
  const pages = listing === null ? 1 : Math.max(1, Math.ceil(listing.total / listing.page_size))
  const sortable = (label: string, column: string) => (
    <SortHeader
      label={label}
      column={column}
      sort={view.sort}
      order={view.order}
      onSort={(sort, order) => change({ sort, order })}
    />
  )
  return (
    <section>
      <h1>{USERS.title}</h1>
      <form
        class="filters"
        aria-label={USERS.filters}
        onSubmit={(event) => {
          event.preventDefault()
          const { keyword, role, status, group } = draft
          change({ keyword, role, status, group })
        }}
      >
        <Field label={USERS.keyword}>
          <input
            name="keyword"
            title={USERS.keywordHelp}
            value={draft.keyword}
            onInput={(e) => setDraft({ ...draft, keyword: e.currentTarget.value })}
          />
        </Field>
        <Field label={USERS.role}>
          <select name="role" value={draft.role} onChange={(e) => setDraft({ ...draft, role: e.currentTarget.value })}>
            <option value="">{LIST.any}</option>
            <option value="user">user</option>
            <option value="admin">admin</option>
            <option value="root">root</option>
          </select>
        </Field>
        <Field label={USERS.status}>
          <select
            name="status"
            value={draft.status}
            onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}
          >
            <option value="">{LIST.any}</option>
            <option value="enabled">{LIST.enabled}</option>
            <option value="disabled">{LIST.disabled}</option>
          </select>
        </Field>
        <Field label={USERS.group}>
          <input
            name="group"
            value={draft.group}
            onInput={(e) => setDraft({ ...draft, group: e.currentTarget.value })}
          />
        </Field>
        <button type="submit">{LIST.search}</button>
      </form>
      <ErrorText error={error} />
      <div class="scroll">
        <table>
          <caption>{USERS.caption(listing?.total ?? 0)}</caption>
          <thead>
            <tr>
              {sortable(USERS.columns.username, "username")}
              {sortable(USERS.columns.role, "role")}
              {sortable(USERS.columns.group, "group")}
              {sortable(USERS.columns.balance, "quota")}
              {sortable(USERS.columns.used, "used_quota")}
              <th scope="col">{USERS.columns.budgets}</th>
              <th scope="col">{USERS.columns.status}</th>
              <th scope="col">{USERS.columns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {listing?.items.map((item) => (
              <UserRow
                key={`${item.id}-${item.quota}-${item.status}-${item.role}-${item.group}-${
                  JSON.stringify(item.budgets?.map((budget) => [budget.amount, budget.period, budget.timezone]))
                }`}
                item={item}
                onChanged={load}
              />
            ))}
          </tbody>
        </table>
      </div>
      <Pager
        label={USERS.pages}
        page={Number(view.page) || 1}
        pages={pages}
        setPage={(page) => change({ page: String(page) })}
      />
      {created && <p role="status">{created}</p>}
      <CreateUser
        onCreated={(username) => {
          setCreated(USERS.added(username))
          load()
        }}
      />
    </section>
  )
}
