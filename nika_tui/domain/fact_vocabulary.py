"""Words the fact parser knows, English and French (accents stripped, lower case).

General vocabulary only: weekdays, number words, work-item statuses, environments, hedges,
change cues, additive cues, negations and stopwords. Nothing here names a particular fact.
"""

from __future__ import annotations

WEEKDAYS: dict[str, str] = {
    "monday": "monday",
    "tuesday": "tuesday",
    "wednesday": "wednesday",
    "thursday": "thursday",
    "friday": "friday",
    "saturday": "saturday",
    "sunday": "sunday",
    "lundi": "monday",
    "mardi": "tuesday",
    "mercredi": "wednesday",
    "jeudi": "thursday",
    "vendredi": "friday",
    "samedi": "saturday",
    "dimanche": "sunday",
}

NUMBER_WORDS: dict[str, str] = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "deux": "2",
    "trois": "3",
    "quatre": "4",
    "cinq": "5",
    "sept": "7",
    "huit": "8",
    "neuf": "9",
    "dix": "10",
}

# Work-item statuses (normalised, accents stripped) → canonical status.
STATUSES: dict[str, str] = {
    "in review": "review",
    "under review": "review",
    "en revue": "review",
    "in progress": "progress",
    "en cours": "progress",
    "on hold": "hold",
    "en attente": "hold",
    "to do": "todo",
    "todo": "todo",
    "a faire": "todo",
    "done": "done",
    "finished": "done",
    "termine": "done",
    "terminee": "done",
    "blocked": "blocked",
    "bloque": "blocked",
    "bloquee": "blocked",
    "merged": "merged",
    "fusionne": "merged",
    "closed": "closed",
    "ferme": "closed",
    "fermee": "closed",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "annule": "cancelled",
    "annulee": "cancelled",
    "resolved": "resolved",
    "resolu": "resolved",
    "reopened": "open",
}

# Deployment environments: two facts about different environments are about different things.
ENVIRONMENTS: dict[str, str] = {
    "staging": "staging",
    "stg": "staging",
    "preprod": "staging",
    "preproduction": "staging",
    "production": "production",
    "prod": "production",
    "dev": "development",
    "development": "development",
    "developpement": "development",
    "qa": "qa",
    "sandbox": "sandbox",
    "demo": "demo",
    "recette": "qa",
}

HEDGE_PHRASES: tuple[str, ...] = (
    "might",
    "maybe",
    "perhaps",
    "probably",
    "possibly",
    "may",
    "could",
    "not sure",
    "unsure",
    "i think",
    "i believe",
    "i guess",
    "rumour",
    "rumor",
    "heard",
    "someone said",
    "apparently",
    "seems",
    "seem",
    "unconfirmed",
    "not confirmed",
    "to be confirmed",
    "tbc",
    "tbd",
    "can someone confirm",
    "considering",
    "evaluating",
    "proposal",
    "proposed",
    "peut-etre",
    "peut etre",
    "a voir",
    "il parait",
    "je crois",
    "je pense",
    "probablement",
    "sans doute",
    "a verifier",
    "a confirmer",
    "on dirait",
    "semble",
    "semblerait",
    "serait",
    "pourrait",
    "rumeur",
    "envisage",
    "non confirme",
)

CHANGE_PHRASES: tuple[str, ...] = (
    "no longer",
    "not anymore",
    "any more",
    "anymore",
    "took over",
    "taking over",
    "takes over",
    "from now on",
    "as of",
    "moved",
    "now",
    "instead",
    "renamed",
    "switched",
    "changed",
    "migrated",
    "migration",
    "upgraded",
    "downgraded",
    "replaced",
    "reassigned",
    "raised",
    "lowered",
    "reduced",
    "increased",
    "bumped",
    "decommissioned",
    "deprecated",
    "retired",
    "dropped",
    "desormais",
    "maintenant",
    "dorenavant",
    "a partir de",
    "plus de",
    "n'est plus",
    "ne sont plus",
    "demenage",
    "renomme",
    "renommee",
    "remplace",
    "remplacee",
    "migre",
    "migree",
    "change",
    "changee",
    "reattribue",
    "reattribuee",
    "finalement",
    "est passe",
    "est passee",
)

ADDITIVE_PHRASES: tuple[str, ...] = (
    "too",
    "also",
    "as well",
    "additionally",
    "in addition",
    "another",
    "aussi",
    "egalement",
    "en plus",
    "de plus",
)

NEGATION_WORDS: frozenset[str] = frozenset(
    {"not", "no", "never", "none", "pas", "jamais", "aucun", "aucune", "ni"}
)

_STOPWORD_TEXT = """
    a an the this that these those it its it's is are was were be been being am has have had
    do does did done will would shall should can of to in on at by for with from into onto as
    and or but so if then than via per over under about after before between through up down
    we our us you your they their them he she his her i me my there here what which who whom
    where when how all any each every some such only just still again very more most less
    use uses used using run runs running ran live lives lived happen happens happened go goes
    going went get gets got set sets make makes made need needs needed require requires
    required requiring want wants keep keeps kept take takes took put puts call called named
    appelle appellent nomme nommee
    now then yet today tonight yesterday tomorrow morning night last next week weeks since ago
    lately day days month months year years time times
    le la les l un une des du de d au aux ce cet cette ces il elle ils elles on nous vous
    je j tu se s sa son ses leur leurs est sont etait etaient ete etre a ont avait avaient
    fait font faire et ou mais donc or ni car que qu qui quoi dont sur sous dans par pour
    avec sans chez entre vers en y ne n plus tres tout tous toute toutes lieu tourne tournent
    utilise utilisent utiliser se fait cette semaine jour jours mois
    """
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
